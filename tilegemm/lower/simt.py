"""The SIMT path: `tg.dot` on CUDA cores, cp.async copies into SMEM, register arrays to and from GMEM.

This is how the naive and shared-memory rungs and fp32 GEMMs run. GMEM views are
addressed through a pointer offset from the array's base with their valid extent
(`bounds`) computed at run time, so accesses past the array's edge read zeros
and drop writes, as TMA does. A mixin of `emit.KernelEmitter`.
"""
import math

from ..lang import dtypes
from ..lang.analysis import root_ref
from ..lang.types import MemorySpace
from . import cute_names as cn
from .plan import BufferRole, resolve_view, unsupported
from .rules import BOTH, lowering


class SimtOps:
    """Op handlers and helpers for CUDA-core compute and ordinary (non-TMA) memory access."""

    def gmem_view(self, ref, op, rows=False):
        """Writes a kernel tensor over a GMEM view; returns (tensor variable, bounds source).

        The tensor has the view's dimensions (an index drops its dimension; whether it lies inside the array
        is folded into the bounds); with `rows`, a 1-d view is read as one row, (1, n)."""
        view = resolve_view(ref)
        param = view.root
        whole = self.kernel_tensor(param)
        shape = tuple(param.shape)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        terms, divisor, bounds, indices_inside = [], 0, [], []
        for d, sel in enumerate(view.dims):
            start = self.index_sum(sel.terms)
            if start != "0":
                terms.append(start if strides[d] == 1 else f"({start}) * {strides[d]}")
            divisor = math.gcd(divisor, sel.multiple() * strides[d])
            static = sel.static_start
            if sel.is_index:
                if static is None:
                    indices_inside.append(f"({start} < {shape[d]})")
                elif static >= shape[d]:
                    indices_inside.append("False")
                continue
            bounds.append(str(min(sel.size, shape[d] - static)) if static is not None else
                          f"cutlass.min({sel.size}, {shape[d]} - ({start}))")
        view_shape, view_strides = view.shape, [strides[d] for d in view.kept]
        if rows and len(view_shape) == 1:
            view_shape, view_strides, bounds = (1,) + view_shape, [0] + view_strides, ["1"] + bounds
        if indices_inside:   # an index past the array's edge leaves nothing of the view inside it
            bounds[0] = f"{bounds[0]} * cutlass.Int32({' & '.join(indices_inside)})"
        var = self.names.fresh(f"{self.ref_name(ref)}_view")
        layout = f"cute.make_layout({cn.shape(view_shape)}, stride={cn.shape(view_strides)})"
        if not terms:
            self.w.line(f"{var} = cute.make_tensor({whole}.iterator, {layout})")
        else:
            offset = " + ".join(terms)
            if all(s.static_start is not None for s in view.dims):
                offset = str(sum(s.static_start * st for s, st in zip(view.dims, strides)))
            elif divisor > 1:
                offset = f"cute.assume({offset}, divby={divisor})"
            self.w.line(f"{var} = cute.make_tensor({whole}.iterator + {offset}, {layout})")
        bvar = self.names.fresh(f"{self.ref_name(ref)}_bounds")
        self.w.line(f"{bvar} = ({', '.join(bounds)},)", "valid extent: the rest lies past the array's edge")
        return var, bvar

    def operand_tensor(self, ref, op):
        """(tensor, bounds) of a GMEM or SMEM ref read by the CUDA cores."""
        if ref.space == MemorySpace.GMEM:
            return self.gmem_view(ref, op)
        var, buf, _, _ = self.smem_view(ref, op)
        if buf.role != BufferRole.PLAIN:
            raise unsupported(op, f"tg.dot reading {buf.name}, a WGMMA operand buffer", "read a plain SMEM buffer")
        return var, cn.shape(ref.shape)

    # ------------------------------------------------------------------ tg.dot

    @lowering("dot", *BOTH)
    def op_dot(self, op):
        self.mark(op)
        a, b = op.arg("a"), op.arg("b")
        for x, which in ((a, "A"), (b, "B")):
            if not hasattr(x, "space"):
                raise unsupported(op, f"tg.dot with a register-array {which} operand",
                                  "pass GMEM or SMEM refs (e.g. a_smem, not a_smem[...])")
        dist = self.simt_distribution(op.result, op)
        a_t, a_bounds = self.operand_tensor(a, op)
        b_t, b_bounds = self.operand_tensor(b, op)
        acc = self.names.fresh("dot_acc")
        typ = cn.cutlass_type(op.result.type.dtype)
        (tr, tc), (vr, vc) = dist.threads, dist.values
        self.w.line(f"{acc} = cute.make_rmem_tensor({cn.shape(dist.values)}, {typ})",
                    f"each thread computes {vr}x{vc} elements, threads in a {tr}x{tc} grid")
        if op.arg("acc") is not None:
            self.w.line(f"{acc}.store({self.array(op.arg('acc'))})")
        else:
            self.w.line(f"{acc}.fill(0.0)")
        self.w.line(f"tgd.simt_dot({acc}, {a_t}, {a_bounds}, {b_t}, {b_bounds}, thread_in_warpgroup, {tr}, {tc})")
        self.bind_array(op.result, f"{acc}.load()")
        self.features.add("simt")

    def simt_distribution(self, value, op):
        """The Simt distribution of `value` (an array, or the distribution itself), checked to be lowerable."""
        dist = self.dists[id(value)] if hasattr(value, "type") else value
        m, n = dist.grid
        tr, tc = dist.threads
        if m % tr and m > tr:
            raise unsupported(op, f"a {m}x{n} CUDA-core array", f"use a number of rows that is a multiple of {tr} "
                              f"(or below it), e.g. {m - m % tr}")
        return dist

    def store_simt(self, op, dst, value, bounds):
        dist = self.simt_distribution(value, op)
        (tr, tc) = dist.threads
        bounds = bounds if bounds is not None else cn.shape(dist.grid)
        self.w.line(f"tgd.store_simt({self.array(value)}, {dst}, {bounds}, thread_in_warpgroup, {tr}, {tc})")

    # ------------------------------------------------------------------ copies through "registers"

    def load_for_copy(self, op):
        """A load of a GMEM view only stored into plain SMEM buffers (a Copy) is lowered where it is stored
        (copy_into_smem)."""

    def copy_into_smem(self, op, ref, value):
        """smem_view[...] = ref_view[...]: cp.async from GMEM (zero-filling past the edge), then a warpgroup sync."""
        src = value.producer.arg("ref")
        if src.space != MemorySpace.GMEM:
            raise unsupported(op, "copying SMEM to SMEM through registers", "copy from GMEM views into SMEM")
        s_t, bounds = self.gmem_view(src, op)
        d_t, buf, _, _ = self.smem_view(ref, op)
        if buf.composed:
            raise unsupported(op, f"a register copy into {buf.name}, a swizzled or WGMMA operand buffer",
                              "copy into SMEM buffers without transforms, or fill swizzled buffers with "
                              "tg.copy_gmem_to_smem (TMA)")
        vec = self.copy_vector(src)
        self.warpgroup_sync()
        self.w.line(f"tgd.copy_async({s_t}, {bounds}, {d_t}, thread_in_warpgroup, {vec})",
                    f"{vec * dtypes.itemsize(src.dtype)}-byte cp.async per thread and step")
        self.w.line("cute.arch.cp_async_commit_group()")
        self.w.line("cute.arch.cp_async_wait_group(0)")
        self.warpgroup_sync()
        if vec * dtypes.itemsize(src.dtype) >= 4:
            self.features.add("cp.async")

    def copy_vector(self, src):
        """Elements per copy: the widest 16/8/4-byte vector that rows, view width and start all align to."""
        view = resolve_view(src)
        root = root_ref(src)
        isz = dtypes.itemsize(root.dtype)
        last = view.dims[-1]
        for nbytes in (16, 8, 4, 2, 1):
            vec = nbytes // isz
            if vec < 1 or nbytes < isz:
                continue
            if root.shape[-1] % vec == 0 and last.size % vec == 0 and last.multiple() % vec == 0:
                return vec
        return 1
