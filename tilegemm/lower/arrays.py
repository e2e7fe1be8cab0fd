"""Register arrays, for both architectures: loads and stores of refs, elementwise math, conversions.

Where an array's elements live among the warpgroup's threads is its distribution (distribution.py). Simt
arrays are partitioned here; an accumulator layout is the architecture's: a WGMMA fragment on sm_90a
(`Sm90Ops.accumulator_partition`), a tcgen05.ld fragment on sm_100a (`Sm100Ops.accumulator_partition`).
A mixin of `emit.KernelEmitter`.
"""
import contextlib

from ..lang import dtypes
from ..lang.analysis import root_ref
from ..lang.registry import GENERIC, READ
from ..lang.types import ArrayType, MemorySpace, ScalarType
from . import cute_names as cn
from .distribution import Broadcast, Copy, Simt, Uniform
from .plan import nonnegative, resolve_view, unsupported
from .rules import BOTH, lowering

_BINOPS = {"add": "+", "sub": "-", "mul": "*", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
           "ne": "!="}


class ArrayOps:
    """Op handlers and helpers for register arrays."""

    # ------------------------------------------------------------------ loads and stores

    @lowering("load", *BOTH)
    def op_load(self, op):
        ref = op.arg("ref")
        if ref.space == MemorySpace.ACC:
            self.load_accumulator(op)
        elif ref.space == MemorySpace.TMEM:
            self.load_tmem(op)
        elif isinstance(self.dists[id(op.result)], Copy):
            self.load_for_copy(op)
        elif isinstance(self.dists[id(op.result)], Uniform):
            self.mark(op)
            self.load_element(op)
        else:
            self.mark(op)
            self.load_registers(op)

    @lowering("store", *BOTH)
    def op_store(self, op):
        ref, value = op.arg("ref"), op.arg("value")
        self.mark(op)
        if isinstance(self.dists.get(id(value)), Broadcast):
            raise unsupported(op, f"storing a {value.type} laid out for broadcasting over an accumulator",
                              "store arrays of the accumulator's shape (e.g. acc[...] + bias)")
        if ref.space == MemorySpace.ACC:
            self.store_accumulator(ref, value)
        elif isinstance(self.dists.get(id(value)), Uniform):
            self.store_element(op, ref, value)
        elif ref.space == MemorySpace.SMEM:
            self.store_smem(op, ref, value)
        elif ref.space == MemorySpace.GMEM:
            self.store_gmem(op, ref, value)
        else:
            raise unsupported(op, f"storing into a {ref.space.upper()} ref", "store into ACC, SMEM or GMEM refs")

    def load_registers(self, op):
        """array = view[...] of GMEM or SMEM, read straight into the distribution of the array it is computed
        with: an accumulator's (a smaller view broadcast over it is read through a zero-stride layout of
        itself), or the CUDA cores' thread grid. GMEM elements past the array's edge read zero."""
        ref, value = op.arg("ref"), op.result
        dist = self.dists[id(value)]
        target = dist.target if isinstance(dist, Broadcast) else dist
        if ref.space == MemorySpace.GMEM:
            tensor, bounds = self.gmem_view(ref, op, rows=isinstance(target, Simt))
        else:
            tensor, buf, _, _ = self.smem_view(ref, op)
            if buf.transposed:
                raise unsupported(op, f"reading {buf.name}, an MN-major MMA operand buffer, into registers",
                                  "read a separate buffer")
            self.check_simt_smem(op, ref, target)
            bounds = None
        if isinstance(target, Simt):
            bounds = bounds or cn.shape(ref.shape)
            if isinstance(dist, Broadcast):
                tensor, bounds = self.broadcast_view(tensor, bounds, ref.shape, target.shape)
            self.load_simt(value, target, tensor, bounds, op)
            return
        coords = f"cute.make_identity_tensor({cn.shape(ref.shape)})"
        if isinstance(dist, Broadcast):
            layout = broadcast_layout(ref.shape, target.shape, dist.dims)
            self.w.comment(f"the {cn.shape(ref.shape)} view read as a {cn.shape(target.shape)} array: "
                           "stride 0 along the dimensions it is broadcast over")
            tensor, coords = f"cute.composition({tensor}, {layout})", f"cute.composition({coords}, {layout})"
        stem = self.ref_name(ref)
        part = self.names.fresh(f"{stem}_part")
        self.w.line(f"{part} = {self.partition(target, tensor, op)}", "this thread's elements")
        if bounds is None:
            self.bind_array(value, f"{part}.load()", hint=f"{stem}_values")
            return
        part_coords = self.names.fresh(f"{stem}_coords")
        self.w.line(f"{part_coords} = {self.partition(target, coords, op)}")
        if isinstance(dist, Broadcast):
            self.bind_array(value, f"tgd.load_broadcast({part}, {part_coords}, {bounds}, "
                                   f"{cn.cutlass_type(ref.dtype)})", hint=f"{stem}_values")
            return
        self.bind_array(value, f"tgd.load_predicated({part}, {part_coords}, {bounds}, {cn.shape(ref.shape)}, "
                               f"{cn.cutlass_type(ref.dtype)})", hint=f"{stem}_values")

    def partition(self, dist, tensor, op):
        """Source of this thread's part of an array-shaped tensor in the architecture's accumulator layout
        `dist` (`accumulator_partition`)."""
        return self.accumulator_partition(dist, tensor, op)

    def broadcast_view(self, tensor, bounds, shape, target):
        """(tensor, bounds) of a `shape` view read as a `target`-shaped one (numpy broadcasting): zero strides
        along the broadcast dimensions, which are valid wherever the view's one element is."""
        self.w.comment(f"the {cn.shape(shape)} view read as a {cn.shape(target)} array: stride 0 along the "
                       "dimensions it is broadcast over")
        padded = (1,) * (len(target) - len(shape)) + tuple(shape)
        valid = self.names.fresh("valid")
        self.w.line(f"{valid} = {bounds}")
        extents = [f"{valid}[{d - len(target) + len(shape)}]" if d >= len(target) - len(shape) else "1"
                   for d in range(len(target))]
        extents = [f"{full} * {extent}" if size == 1 and full > 1 else extent
                   for size, full, extent in zip(padded, target, extents)]
        return (f"cute.composition({tensor}, {broadcast_layout(shape, target)})",
                f"({', '.join(extents)}{',' if len(extents) == 1 else ''})")

    def load_simt(self, value, dist, tensor, bounds, op):
        """Reads this thread's elements of a view into a register fragment in the CUDA cores' thread grid
        `dist`."""
        dist = self.simt_distribution(dist, op)
        (tr, tc), regs = dist.threads, self.names.fresh(f"{self.ref_name(op.arg('ref'))}_regs")
        self.w.line(f"{regs} = cute.make_rmem_tensor({cn.shape(dist.values)}, {cn.cutlass_type(value.dtype)})")
        self.w.line(f"tgd.load_simt({regs}, {tensor}, {bounds}, thread_in_warpgroup, {tr}, {tc})",
                    "this thread's elements; past the array's edge: zero")
        self.expr[id(value)] = f"{regs}.load()"

    def element_access(self, ref, op):
        """(source of the element a 0-d view of GMEM or SMEM names, source of whether it lies inside the array
        (None: it always does))."""
        if ref.space == MemorySpace.SMEM:
            var, _, _, _ = self.smem_view(ref, op)
            return var, None
        whole, coord, inside = self.gmem_element(ref)
        return f"{whole}[{coord}]", inside

    def gmem_element(self, ref):
        """(kernel tensor, coordinate, whether it lies inside the array: None where it always does) of the element
        a 0-d view of GMEM names."""
        view = resolve_view(ref)
        whole = self.kernel_tensor(view.root)
        index = [self.index_sum(sel.terms) for sel in view.dims]
        coord = f"({', '.join(index)}{',' if len(index) == 1 else ''})"
        static = [sel.static_start for sel in view.dims]
        if None not in static and all(s < n for s, n in zip(static, view.root.shape)):
            return whole, coord, None
        below = [f"({i} >= 0)" for i, sel in zip(index, view.dims)
                 if not all(nonnegative(t, self.loop_starts) for t in sel.terms)]   # an index read at run time
        return whole, coord, " & ".join([f"cute.elem_less({coord}, {cn.shape(view.root.shape)})"] + below)

    def load_element(self, op):
        """x = ref[i, j]: every thread reads the one element (zero past a GMEM array's edge)."""
        ref, value = op.arg("ref"), op.result
        element, inside = self.element_access(ref, op)
        name = self.names.fresh(f"{self.ref_name(ref)}_value")
        if inside is None:
            self.w.line(f"{name} = {element}")
        else:
            self.w.line(f"{name} = {cn.cutlass_type(value.type.dtype)}(0)", "past the array's edge: zero")
            with self.w.block(f"if {inside}:"):
                self.w.line(f"{name} = {element}")
        self.expr[id(value)] = name

    @lowering("load_scalar", *BOTH)
    def op_load_scalar(self, op):
        """i = idx[t] of an int32 ref: every thread reads the element into a variable where the op stands
        in the kernel's order, so the value is the one memory holds then."""
        self.mark(op)
        self.load_element(op)

    @lowering("count_arrival", *BOTH)
    def op_count_arrival(self, op):
        """last = tg.count_arrival(counter, n): the warpgroup's threads meet at its named barrier (their GMEM
        stores done), one of them adds 1 to the counter (acquire-release, GPU scope), and a second barrier hands
        every thread whether that add was the n-th (tgd.count_arrival)."""
        self.mark(op)
        whole, coord, inside = self.gmem_element(op.arg("counter"))
        name = self.names.fresh("last_arrival")
        self.w.line(f"{name} = tgd.count_arrival({whole}, {coord}, {inside or 'True'}, {op.attrs['arrivals']}, "
                    "thread_in_warpgroup, 1 + warpgroup_idx)", "past the array's edge: no add, never the last")
        self.expr[id(op.result)] = name

    def store_element(self, op, ref, value):
        """ref[i, j] = x: one thread of the warpgroup writes the element (dropped past a GMEM array's edge)."""
        element, inside = self.element_access(ref, op)
        with self.w.block("if thread_in_warpgroup == 0:"):
            if inside is None:
                self.w.line(f"{element} = {self.array(value)}")
            else:
                with self.w.block(f"if {inside}:"):
                    self.w.line(f"{element} = {self.array(value)}")

    def store_smem(self, op, ref, value):
        dist = self.dists[id(value)]
        if isinstance(dist, Copy):
            self.copy_into_smem(op, ref, value)
            return
        with self.register_store(op, ref) as var:
            if isinstance(dist, Simt):
                self.check_simt_smem(op, ref, dist)
                self.store_simt(op, var, value, bounds=None)
            else:
                self.w.line(f"{self.accumulator_partition(dist, var, op)}.store({self.array(value)})")

    @contextlib.contextmanager
    def register_store(self, op, ref):
        """Around the code of a store of registers into SMEM `ref` (yields its tensor variable): the warpgroup's
        ordinary loads of the buffer are ordered before and after it by a warpgroup sync."""
        if resolve_view(ref).transposed:
            var, buf = self.transposed_view(ref, op)
        else:
            var, buf, _, _ = self.smem_view(ref, op)
        if buf.transposed:
            raise unsupported(op, f"storing registers into {buf.name}, an MN-major MMA operand buffer",
                              "store into a separate buffer")
        sync = self.generically_read(buf)
        if sync:
            self.warpgroup_sync()
        yield var
        if sync:
            self.warpgroup_sync()

    def check_simt_smem(self, op, ref, dist):
        """The CUDA cores read and write SMEM views of 2 dimensions."""
        if isinstance(dist, Simt) and len(ref.shape) != 2:
            raise unsupported(op, f"a {len(ref.shape)}-d SMEM view ({ref.type}) in CUDA-core register math",
                              "read and write 2-d windows of SMEM buffers")

    def store_gmem(self, op, ref, value):
        dist = self.dists[id(value)]
        tensor, bounds = self.gmem_view(ref, op, rows=isinstance(dist, Simt))
        if isinstance(dist, Simt):
            self.store_simt(op, tensor, value, bounds=bounds)
        elif isinstance(dist, Copy):
            raise unsupported(op, "copying between GMEM refs through registers",
                              "copy GMEM into SMEM (TMA or smem[...] = ref[...]) and store from SMEM with TMA")
        else:
            ident = f"cute.make_identity_tensor({cn.shape(ref.shape)})"
            self.w.line(f"tgd.store_predicated({self.array(value)}, {self.accumulator_partition(dist, tensor, op)}, "
                        f"{self.accumulator_partition(dist, ident, op)}, {bounds}, {cn.shape(ref.shape)})",
                        "elements past the array's edge are dropped")

    def distribution_fragment_shape(self, dist):
        if isinstance(dist, Broadcast):
            return self.distribution_fragment_shape(dist.target)
        if isinstance(dist, Simt):
            return cn.shape(dist.values)
        if isinstance(dist, Copy):
            raise unsupported(None, "a register array that is only copied", "store loaded arrays directly into SMEM")
        return self.accumulator_fragment_shape(dist)

    def generically_read(self, buf):
        """True if some op reads `buf` with ordinary loads (so register stores must be ordered with a sync)."""
        for op in self.graph.walk():
            for effect in op.opdef.effects:
                ref = op.arg(effect.operand) if effect.access == READ and effect.proxy == GENERIC else None
                if getattr(ref, "space", None) == MemorySpace.SMEM and self.buffers.get(id(root_ref(ref))) is buf:
                    return True
        return False

    # ------------------------------------------------------------------ arithmetic

    def bind_array(self, value, text, hint="x"):
        name = self.names.fresh(self.user_names.get(id(value), hint))
        self.w.line(f"{name} = {text}")
        self.expr[id(value)] = name
        if value.producer is not None and value.producer.opdef.pure:
            self.pure_names.add(name)   # dropped from the module if nothing reads it

    def array(self, x):
        """Source of an array operand (Python numbers stand for themselves in elementwise ops)."""
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return cn.literal(float(x))
        return self.expr[id(x)]

    @lowering("astype", *BOTH)
    def op_astype(self, op):
        self.mark(op)
        dtype, x = op.attrs["dtype"], op.arg("x")
        typ = cn.cutlass_type(dtype)
        if x.type.shape == ():
            text = f"{typ}({self.array(x)})"
        elif (x.dtype, dtype) == (dtypes.float32, dtypes.bfloat16):
            text = f"tgd.to_bfloat16({self.array(x)})"   # in pairs: one at a time, ptxas may serialize WGMMAs
        else:
            text = f"{self.array(x)}.to({typ})"
        self.bind_array(op.result, text, hint=f"as_{dtypes.name(dtype)}")

    def operand(self, x, dtype):
        """Source of an elementwise operand: an array, or a number or traced scalar as an element of `dtype`."""
        if isinstance(getattr(x, "type", None), ScalarType):
            return f"{cn.cutlass_type(dtype)}({self.scalar(x)})"
        if not hasattr(x, "type") and dtype != dtypes.float32:
            return f"{cn.cutlass_type(dtype)}({self.array(x)})"
        return self.array(x)

    @lowering("ewise", *BOTH)
    def op_ewise(self, op):
        self.mark(op)
        a, b = op.arg("a"), op.arg("b")
        kind = op.attrs["op"]
        dtype = next(x.dtype for x in (a, b) if isinstance(getattr(x, "type", None), ArrayType))
        sa, sb = self.operand(a, dtype), self.operand(b, dtype)
        if kind == "min":
            text = f"cute.where({sa} < {sb}, {sa}, {sb})"
        elif kind == "max":
            text = f"cute.where({sa} > {sb}, {sa}, {sb})"
        elif kind == "pow":
            text = self.power(op, a, b)
        else:
            symbol = "/" if kind == "div" else _BINOPS[kind]  # arrays divide as floats; scalars (div) truncate
            text = f"{sa} {symbol} {sb}"
        self.bind_array(op.result, text)

    @lowering("where", *BOTH)
    def op_where(self, op):
        self.mark(op)
        c, a, b = op.arg("cond"), op.arg("on_true"), op.arg("on_false")
        if not hasattr(c, "type") or not isinstance(c.type, ArrayType):
            raise unsupported(op, "tg.where with a scalar condition", "use an array condition (e.g. x > 0.0)")
        self.bind_array(op.result, f"cute.where({self.array(c)}, {self.array(a)}, {self.array(b)})")

    @lowering("full", *BOTH)
    def op_full(self, op):
        self.mark(op)
        value, dtype = op.attrs["value"], op.attrs["dtype"]
        if op.attrs["shape"] == ():
            self.bind_array(op.result, f"{cn.cutlass_type(dtype)}({cn.literal(value)})", hint="filled")
            return
        self.bind_array(op.result, f"cute.full({self.fragment_shape(op.result)}, {cn.literal(value)}, "
                                   f"{cn.cutlass_type(dtype)})", hint="filled")

    def fragment_shape(self, value):
        """Source of the per-thread fragment shape of an array value's distribution."""
        return self.distribution_fragment_shape(self.dists[id(value)])


def broadcast_layout(shape, target, dims=None):
    """Source of the layout reading a `shape` tensor as a `target`-shaped one, its dimension i along the target's
    dimension dims[i] (default: numpy's trailing alignment): it maps target coordinates to the tensor's own
    (column-major) index, 0 along broadcast dims."""
    dims = range(len(target) - len(shape), len(target)) if dims is None else dims
    strides, step = [0] * len(target), 1
    for size, d in zip(shape, dims):
        if size == target[d]:
            strides[d] = step
        step *= size
    return f"cute.make_layout({cn.shape(target)}, stride={cn.shape(strides)})"
