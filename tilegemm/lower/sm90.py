"""Hopper (sm_90a) lowering: TMA loads/stores with multicast, WGMMA, register accumulators, setmaxnreg.

A mixin of `emit.KernelEmitter`: it relies on the emitter's writers (`self.w`,
`self.prologue`, `self.host`), value expressions and scratch tables.
"""
import contextlib
import itertools
import math

from ..lang import dtypes
from ..lang.analysis import K_MAJOR, MN_MAJOR, known_multiple, operand_major, root_ref
from ..lang.types import MemorySpace
from . import cute_names as cn
from .distribution import Broadcast, Copy, Simt, Wgmma
from .plan import resolve_view, unsupported
from ..lang.arch import MMA_K



class Sm90Ops:
    """Op handlers and helpers for the Hopper data-movement and tensor-core paths."""

    def init_sm90(self):
        self.accs = {}          # id(ACC alloc result) -> register tensor variable (a WGMMA C fragment)
        self.mmas = {}          # (a dtype, b dtype, acc dtype, n, a major, b major) -> (mma var, thr var)
        self.tma_atoms = {}     # key -> (atom var, coords var)
        self.host_tensors = {}  # (id(param), order) -> host variable
        self.kernel_tensors = {}  # id(param) -> kernel parameter holding the whole GMEM array
        self.mcast = {}         # axes -> (mask var, rank var)

    # ------------------------------------------------------------------ GMEM tensors and TMA atoms

    def host_tensor(self, param, order):
        """Host variable: a static-shape tensor over `param`'s pointer with its dims in `order`."""
        key = (id(param), tuple(order))
        if key in self.host_tensors:
            return self.host_tensors[key]
        name = self.ref_names[id(param)]
        shape = tuple(param.shape)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        natural = list(order) == sorted(order)
        var = name if natural else self.names.fresh(f"{name}_t")
        if 1 in shape:
            # CuTe drops static extent-1 modes from a TMA descriptor (a 1-row A became a 1-D copy that no longer
            # matched its 2-D SMEM tile, and faulted); an extent read at run time keeps every mode.
            self.constants["one"] = 1
            extents = cn.shape("one" if shape[d] == 1 else shape[d] for d in order)
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_layout({extents}, "
                           f"stride={cn.shape([strides[d] for d in order])}))",
                           f"{param.type}: its extent-1 dimensions read at run time")
        elif natural:
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_ordered_layout({cn.shape(shape)}, "
                           f"order={cn.shape(cn.row_major_order(len(shape)))}))", f"{param.type}, row-major")
        else:
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_layout("
                           f"{cn.shape([shape[d] for d in order])}, stride={cn.shape([strides[d] for d in order])}))",
                           f"{param.type} with its dimensions in the order {tuple(order)}")
        self.host_tensors[key] = var
        return var

    def kernel_tensor(self, param):
        """Kernel parameter: the whole GMEM array as a row-major tensor."""
        if id(param) not in self.kernel_tensors:
            host = self.host_tensor(param, range(len(param.shape)))
            self.kernel_params.append((host, "cute.Tensor"))
            self.kernel_tensors[id(param)] = host
        return self.kernel_tensors[id(param)]

    def tma_atom(self, op, param, buf, index_dims, order, box, load, multicast):
        """(atom, coordinate tensor) kernel parameters of the TMA descriptor for one kind of copy."""
        key = (id(param), buf.name, tuple(index_dims), tuple(order), tuple(box), load, multicast)
        if key in self.tma_atoms:
            return self.tma_atoms[key]
        gmem = self.host_tensor(param, order)
        stem = f"tma_{'load' if load else 'store'}_{buf.name}"
        atom, coords = self.names.fresh(stem), self.names.fresh(f"{stem}_coords")
        if load:
            kind = "CopyBulkTensorTileG2SMulticastOp" if multicast > 1 else "CopyBulkTensorTileG2SOp"
        else:
            kind = "CopyBulkTensorTileS2GOp"
        extra = f", num_multicast={multicast}" if multicast > 1 else ""
        self.host.line(f"{atom}, {coords} = cpasync.make_tiled_tma_atom(cpasync.{kind}(), {gmem}, "
                       f"{buf.stage_layout_expr(index_dims)}, {cn.shape(box)}{extra})", f"{op.loc}")
        self.kernel_params += [(atom, "cute.CopyAtom"), (coords, "cute.Tensor")]
        self.tma_atoms[key] = (atom, coords)
        self.features.add("tma")
        return atom, coords

    # ------------------------------------------------------------------ views

    def tile_coord(self, sel, op, what):
        """Source of `start // size` for a view dimension whose start is a multiple of its size."""
        size = sel.size
        if sel.static_start is not None:
            if sel.static_start % size:
                raise unsupported(op, f"{what} starting at {sel.static_start}, not a multiple of its size {size}",
                                  "start views at multiples of their size (tile-aligned, e.g. tg.ds(i * 64, 64))")
            return str(sel.static_start // size)
        if sel.multiple() % size:
            raise unsupported(op, f"{what} whose start is only known to be a multiple of {sel.multiple()}, "
                                  f"not of its size {size}",
                              "start views at multiples of their size (tile-aligned, e.g. tg.ds(i * 64, 64))")
        return " + ".join(self.divided(t, size) for t in sel.terms if not (isinstance(t, int) and t == 0))

    def divided(self, term, size):
        """Source of term // size for a term that is a multiple of size, simplified where visible."""
        if isinstance(term, int):
            return str(term // size)
        if known_multiple(term) % size == 0:
            p = term.producer
            if p is not None and p.kind == "binop" and p.attrs["op"] == "mul":
                x, c = p.operands
                if isinstance(x, int):
                    x, c = c, x
                if isinstance(c, int) and c % size == 0:
                    return self.scalar(x) if c == size else f"{self.scalar(x)} * {c // size}"
        return f"({self.scalar(term)}) // {size}"

    def smem_view(self, ref, op, mma_operand=False):
        """Writes the CuTe tensor of an SMEM view; returns (variable, buffer, RefView, kept dims in CuTe order).

        The tensor's modes are in the buffer's CuTe order, (M, K) or (N, K) for MMA operands
        whatever their major-ness, so a transposed view (tg.transpose_ref) is only lowered as
        an MMA operand (`mma_operand`), where its major-ness is the buffer's layout.
        """
        view = resolve_view(ref)
        buf = self.buffers[id(view.root)]
        if view.transposed and not mma_operand:
            raise unsupported(op, f"{op.kind} of a transposed view of {buf.name} (tg.transpose_ref)",
                              "transposed shared-memory views are lowered as WGMMA/tcgen05 operands; read and "
                              "write the buffer in its stored order elsewhere")
        text = buf.name
        index_dims = [d for d, s in enumerate(view.dims) if s.is_index]
        if index_dims:
            coord = ["None"] * buf.rank
            for d in index_dims:
                coord[buf.cute_mode(d)] = self.index_sum(view.dims[d].terms)
            text = f"{text}[{', '.join(coord)}]"
        kept = sorted(view.kept, key=buf.cute_mode)
        if not view.is_whole:
            tiler = tuple(view.dims[d].size for d in kept)
            coords = [self.tile_coord(view.dims[d], op, f"a view of {buf.name}") for d in kept]
            text = f"cute.local_tile({text}, {cn.shape(tiler)}, ({', '.join(coords)}{',' if len(coords) == 1 else ''}))"
        if text == buf.name:
            return text, buf, view, kept
        var = self.names.fresh(f"{buf.name}_view")
        self.w.line(f"{var} = {text}")
        return var, buf, view, kept

    def gmem_tile(self, ref, order, coords_tensor, op):
        """Source of the TMA coordinate tile a GMEM view selects, with dims in `order`.

        The tile is taken at the view's element offset (domain_offset) rather than by tile
        index: CuTe gives size-1 modes of a tiled coordinate tensor stride 0, so a tile
        index past the array's last tile would silently select the first tile.
        """
        view = resolve_view(ref)
        if any(s.is_index for s in view.dims):
            raise unsupported(op, "a TMA copy of a GMEM view that indexes away a dimension",
                              "slice every dimension of the array with tg.ds (a box may have size 1)")
        box = [view.dims[d].size for d in order]
        starts = [self.index_sum(view.dims[d].terms) for d in order]
        origin = f"cute.domain_offset(({', '.join(starts)}{',' if len(starts) == 1 else ''}), {coords_tensor})"
        zeros = ", ".join("0" for _ in order)
        return box, f"cute.local_tile({origin}, {cn.shape(box)}, ({zeros}{',' if len(order) == 1 else ''}))"

    # ------------------------------------------------------------------ TMA copies

    def op_copy_gmem_to_smem(self, op):
        src, dst, barrier = op.operands
        self.mark(op)
        if op.attrs["partitioned_axis"] is not None:
            raise unsupported(op, "a partitioned (2-CTA) TMA copy", "partitioned copies exist on sm_100a")
        s_var, buf, s_view, kept = self.smem_view(dst, op)
        self.require_whole(op, s_view, buf, "TMA destination")
        param = root_ref(src)
        order = [s_view.kept.index(d) for d in kept]
        box = [dst.shape[k] for k in order]
        axes = op.attrs["collective_axes"]
        n = self.collective_size(axes, op)
        index_dims = [d for d, s in enumerate(s_view.dims) if s.is_index]
        atom, coords = self.tma_atom(op, param, buf, index_dims, order, box, True, n)
        _, tile = self.gmem_tile(src, order, coords, op)
        bars, i = self.barrier_ptr(barrier)
        nbytes = math.prod(dst.shape) * dtypes.itemsize(dst.dtype)
        g_var, s_part, g_part = (self.names.fresh(x) for x in ("gmem_tile", "smem_part", "gmem_part"))
        self.w.line(f"{g_var} = {tile}")
        rank = len(kept)
        if n > 1:
            mask, rank_var = self.multicast_vars(axes)
            cta = f"{rank_var}, cute.make_layout({n})"
            extra = f", mcast_mask={mask}"
            self.features.add("multicast")
        else:
            cta, extra = "0, cute.make_layout(1)", ""
        self.w.line(f"{s_part}, {g_part} = cpasync.tma_partition({atom}, {cta}, cute.group_modes({s_var}, 0, {rank}), "
                    f"cute.group_modes({g_var}, 0, {rank}))")
        with self.single_warp():
            with self.w.block("with cute.arch.elect_one():"):
                self.w.line(f"cute.arch.mbarrier_arrive_and_expect_tx({bars.name} + {i}, {nbytes})",
                            "one arrival, and the bytes the copy will deliver")
            self.w.line(f"cute.copy({atom}, {g_part}, {s_part}, tma_bar_ptr={bars.name} + {i}{extra})")

    def op_copy_smem_to_gmem(self, op):
        src, dst = op.operands
        self.mark(op)
        s_var, buf, s_view, kept = self.smem_view(src, op)
        self.require_whole(op, s_view, buf, "TMA store source")
        order = [s_view.kept.index(d) for d in kept]
        box = [src.shape[k] for k in order]
        index_dims = [d for d, s in enumerate(s_view.dims) if s.is_index]
        atom, coords = self.tma_atom(op, root_ref(dst), buf, index_dims, order, box, False, 1)
        _, tile = self.gmem_tile(dst, order, coords, op)
        g_var, s_part, g_part = (self.names.fresh(x) for x in ("gmem_tile", "smem_part", "gmem_part"))
        self.w.line(f"{g_var} = {tile}")
        rank = len(kept)
        self.w.line(f"{s_part}, {g_part} = cpasync.tma_partition({atom}, 0, cute.make_layout(1), "
                    f"cute.group_modes({s_var}, 0, {rank}), cute.group_modes({g_var}, 0, {rank}))")
        with self.single_warp():
            self.w.line(f"cute.copy({atom}, {s_part}, {g_part})")
            if op.attrs["commit_group"]:
                self.w.line("cute.arch.cp_async_bulk_commit_group()")

    def require_whole(self, op, view, buf, what):
        if not view.is_whole:
            raise unsupported(op, f"a {what} that is part of a buffer's tile ({buf.name} {view.shape})",
                              f"copy whole buffers or whole leading-index selections such as {buf.name}.at[slot]")

    def single_warp(self):
        """A block whose body one warp of the warpgroup runs (inside a core_map: each warp, no guard)."""
        if self.core_map_depth:
            return contextlib.nullcontext()
        return self.w.block("if warp_in_warpgroup == 0:")

    def op_commit_smem(self, op):
        self.mark(op)
        self.w.line('cute.arch.fence_proxy("async.shared", space="cta")',
                    "make generic SMEM writes visible to TMA / tensor cores")
        if not self.core_map_depth:
            self.warpgroup_sync()

    def op_wait_smem_to_gmem(self, op):
        self.mark(op)
        n, read_only = op.attrs["n"], op.attrs["read_only"]
        with self.single_warp():
            self.w.line(f"cute.arch.cp_async_bulk_wait_group({n}, read={read_only})")
        if not self.core_map_depth:
            self.warpgroup_sync()

    # ------------------------------------------------------------------ clusters

    def cluster_strides(self):
        sizes = self.graph.config["cluster"]
        return [math.prod(sizes[:i]) for i in range(len(sizes))]

    def collective_size(self, axes, op):
        names = self.graph.config["cluster_names"]
        for a in axes:
            if a not in names:
                raise unsupported(op, f"collective axis {a!r}", f"name cluster axes ({', '.join(names)})")
        return math.prod(self.graph.config["cluster"][names.index(a)] for a in axes)

    def own_cluster_base(self, axes):
        """Source of the cluster rank of this block with its coordinates along `axes` set to 0."""
        cfg = self.graph.config
        parts = []
        for i, (a, stride) in enumerate(zip(cfg["cluster_names"], self.cluster_strides())):
            if a not in axes and cfg["cluster"][i] > 1:
                coord = self.axis_var(a, None)
                parts.append(coord if stride == 1 else f"{coord} * {stride}")
        return " + ".join(parts) if parts else "0"

    def peer_offsets(self, axes):
        """Rank offsets (from the base) of every block along `axes`, in collective-rank order."""
        cfg = self.graph.config
        dims = [(cfg["cluster"][cfg["cluster_names"].index(a)], self.cluster_strides()[cfg["cluster_names"].index(a)])
                for a in axes]
        offsets = []
        for combo in itertools.product(*[range(n) for n, _ in reversed(dims)]):
            offsets.append(sum(c * s for c, (_, s) in zip(combo, reversed(dims))))
        return offsets

    def cluster_peer_ranks(self, axes):
        base = self.own_cluster_base(axes)
        return [f"{base} + {off}" if base != "0" else str(off) for off in self.peer_offsets(axes)]

    def multicast_vars(self, axes):
        """Prologue variables: the multicast mask of the blocks along `axes` and this block's rank among them."""
        if axes in self.mcast:
            return self.mcast[axes]
        cfg = self.graph.config
        pattern = sum(1 << off for off in self.peer_offsets(axes))
        base = self.own_cluster_base(axes)
        mask = self.names.fresh(f"mcast_mask_{'_'.join(axes)}")
        rank = self.names.fresh(f"rank_in_{'_'.join(axes)}")
        shift = "" if base == "0" else f" << ({base})"
        self.prologue.line(f"{mask} = cutlass.Int16({pattern}){shift}", f"blocks along {axes} receive each tile")
        parts, stride = [], 1
        for a in axes:
            n = cfg["cluster"][cfg["cluster_names"].index(a)]
            coord = self.axis_var(a, None)
            parts.append(coord if stride == 1 else f"{coord} * {stride}")
            stride *= n
        self.prologue.line(f"{rank} = {' + '.join(parts)}")
        self.mcast[axes] = (mask, rank)
        return mask, rank

    # ------------------------------------------------------------------ WGMMA

    def tiled_mma(self, a_dtype, b_dtype, acc_dtype, n, a_major=K_MAJOR, b_major=MN_MAJOR):
        """Prologue variables (tiled MMA, this thread's slice) for an m64nNk16 WGMMA with the given dtypes and
        operand major-ness (analysis.K_MAJOR / MN_MAJOR)."""
        key = (a_dtype, b_dtype, acc_dtype, n, a_major, b_major)
        if key not in self.mmas:
            mma = self.names.fresh(f"mma_64x{n}")
            thr = self.names.fresh(f"thr_mma_64x{n}")
            p = self.prologue
            a_words = "K" if a_major == K_MAJOR else "M"
            b_words = "N" if b_major == MN_MAJOR else "K"
            p.line(f"{mma} = sm90_helpers.make_trivial_tiled_mma({cn.cutlass_type(a_dtype)}, "
                   f"{cn.cutlass_type(b_dtype)}, OperandMajorMode.{a_major}, OperandMajorMode.{b_major}, "
                   f"{cn.cutlass_type(acc_dtype)}, (1, 1, 1), (64, {n}))",
                   f"WGMMA m64n{n}k16, A {a_words}-major, B {b_words}-major")
            p.line(f"{mma}.set(warpgroup.Field.ACCUMULATE, True)")
            p.line(f"{thr} = {mma}.get_slice(thread_in_warpgroup)")
            self.mmas[key] = (mma, thr)
        return self.mmas[key]

    def wgmma_of(self, op):
        """(tiled MMA, thread slice) of a `wgmma` op: its dtypes, its N and its operands' major-ness."""
        acc, a, b = op.operands
        a_major = operand_major("A", a) if hasattr(a, "space") else K_MAJOR   # A in registers: K-major
        return self.tiled_mma(a.dtype, b.dtype, acc.dtype, acc.shape[1], a_major, operand_major("B", b))

    def c_partitioner(self, n):
        """A thread slice whose partition_C lays out an (M, n) array like a WGMMA accumulator."""
        for key, (_, thr) in self.mmas.items():
            if key[3] == n:
                return thr
        return self.tiled_mma(dtypes.float16, dtypes.float16, dtypes.float32, n)[1]

    def declare_accumulator(self, op):
        ref = op.result
        m, n = ref.shape
        users = [u for u in self.graph.walk() if u.kind == "wgmma" and root_ref(u.operands[0]) is ref]
        _, thr = self.wgmma_of(users[0]) if users else self.tiled_mma(dtypes.float16, dtypes.float16, ref.dtype, n)
        name = self.ref_names[id(ref)]
        self.w.line(f"{name} = cute.make_rmem_tensor({thr}.partition_shape_C(({m}, {n})), "
                    f"{cn.cutlass_type(ref.dtype)})", f"{ref.type}: registers of this warpgroup")
        self.w.line(f"{name}.fill(0.0)")
        self.accs[id(ref)] = name

    def accumulator(self, ref, op=None):
        """The register tensor variable of an ACC ref."""
        if ref.producer is not None and ref.producer.kind == "view":
            raise unsupported(op or ref.producer, "a view of an accumulator (acc.at[...])",
                              "use the whole ACC ref, or slice the loaded array (acc[...][rows, cols])")
        return self.accs[id(ref)]

    def op_wgmma(self, op):
        acc_ref, a, b = op.operands
        self.mark(op)
        if not hasattr(a, "space"):
            raise unsupported(op, "a WGMMA whose A operand is a register array",
                              "store A into an SMEM buffer (with the MMA swizzle) and pass the buffer")
        for x in (a, b):
            if x.dtype not in dtypes.MMA_INPUT_DTYPES:
                raise unsupported(op, f"WGMMA operands of type {dtypes.name(x.dtype)}",
                                  "use float16 or bfloat16 operands (tg.dot computes float32 on CUDA cores)")
        acc = self.accumulator(acc_ref, op)
        mma, thr = self.wgmma_of(op)
        a_var, _, _, _ = self.smem_view(a, op, mma_operand=True)
        b_var, _, _, _ = self.smem_view(b, op, mma_operand=True)
        a_frag, b_frag = self.names.fresh("a_frag"), self.names.fresh("b_frag")
        self.w.line(f"{a_frag} = {mma}.make_fragment_A({thr}.partition_A({a_var}))", "SMEM descriptors")
        self.w.line(f"{b_frag} = {mma}.make_fragment_B({thr}.partition_B({b_var}))")
        self.w.line("warpgroup.fence()")
        k_blocks = a.shape[1] // MMA_K
        with self.w.block(f"for k_block in cutlass.range_constexpr({k_blocks}):"):
            self.w.line(f"cute.gemm({mma}, {acc}, {a_frag}[None, None, k_block], "
                        f"{b_frag}[None, None, k_block], {acc})")
        self.w.line("warpgroup.commit_group()", "one WGMMA group; completes by wgmma_wait")
        self.features.add("wgmma")

    def op_wgmma_wait(self, op):
        self.mark(op)
        self.w.line(f"warpgroup.wait_group({op.attrs['n']})")

    def op_set_max_registers(self, op):
        self.mark(op)
        if self.core_map_depth:
            raise unsupported(op, "set_max_registers inside a core_map",
                              "call it where the whole warpgroup runs: setmaxnreg is a warpgroup-wide instruction")
        fn = "setmaxregister_increase" if op.attrs["action"] == "increase" else "setmaxregister_decrease"
        self.w.line(f"cute.arch.{fn}({op.attrs['n']})")
        self.features.add("setmaxnreg")

    # ------------------------------------------------------------------ accumulator arrays

    def store_accumulator(self, ref, value):
        acc = self.accumulator(ref)
        producer = getattr(value, "producer", None)
        if producer is not None and producer.kind == "full":
            self.w.line(f"{acc}.fill({cn.literal(producer.attrs['value'])})")
        else:
            self.w.line(f"{acc}.store({self.array(value)})")

    def op_array_slice(self, op):
        self.mark(op)
        (src,) = op.operands
        m, n = src.type.shape
        (r0, c0), (h, w) = op.attrs["starts"], op.attrs["sizes"]
        self.bind_array(op.result, f"tgd.accumulator_slice({self.array(src)}, ({m}, {n}), ({r0}, {c0}), ({h}, {w}))",
                        hint="part")

    def load_registers(self, op):
        """array = view[...] of GMEM or SMEM, read straight into the distribution of the accumulator array it is
        computed with; a smaller view broadcast over it is read through a zero-stride layout of itself.
        GMEM elements past the array's edge read zero."""
        ref, value = op.operands[0], op.result
        dist = self.dists[id(value)]
        target = dist.target if isinstance(dist, Broadcast) else dist
        if ref.space == MemorySpace.GMEM:
            tensor, bounds = self.gmem_view(ref, op)
        else:
            tensor, buf, _, _ = self.smem_view(ref, op)
            if buf.transposed:
                raise unsupported(op, f"reading {buf.name}, an MN-major MMA operand buffer, into registers",
                                  "read a separate buffer")
            bounds = None
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
        part_coords, regs, e = (self.names.fresh(x) for x in (f"{stem}_coords", f"{stem}_regs", "e"))
        self.w.line(f"{part_coords} = {self.partition(target, coords, op)}")
        self.w.line(f"{regs} = cute.make_rmem_tensor({self.fragment_shape(value)}, {cn.cutlass_type(ref.dtype)})")
        self.w.line(f"{regs}.fill(0)", "elements past the array's edge read zero")
        with self.w.block(f"for {e} in cutlass.range(cute.size({regs}), unroll_full=True):"):
            with self.w.block(f"if cute.elem_less({part_coords}[{e}], {bounds}):"):
                self.w.line(f"{regs}[{e}] = {part}[{e}]")
        self.expr[id(value)] = f"{regs}.load()"

    def partition(self, dist, tensor, op):
        """Source of this thread's part of an array-shaped tensor under the register distribution `dist`."""
        if isinstance(dist, Wgmma):
            return f"{self.c_partitioner(dist.shape[1])}.partition_C({tensor})"
        raise unsupported(op, "reading a GMEM or SMEM view into registers to combine it with a tg.dot result",
                          "combine views read into registers with WGMMA accumulator arrays (acc[...]); tg.dot "
                          "reads GMEM and SMEM views itself")

    def store_smem(self, op, ref, value):
        dist = self.dists[id(value)]
        if isinstance(dist, Copy):
            self.copy_into_smem(op, ref, value)
            return
        var, buf, view, kept = self.smem_view(ref, op)
        if buf.transposed:
            raise unsupported(op, f"storing registers into {buf.name}, an MN-major MMA operand buffer",
                              "store into a separate buffer")
        sync = self.generically_read(buf)
        if sync:
            self.warpgroup_sync()
        if isinstance(dist, Wgmma):
            thr = self.c_partitioner(ref.shape[1])
            self.w.line(f"{thr}.partition_C({var}).store({self.array(value)})")
        else:
            self.store_simt(op, var, value, bounds=None)
        if sync:
            self.warpgroup_sync()

    def store_gmem(self, op, ref, value):
        dist = self.dists[id(value)]
        tensor, bounds = self.gmem_view(ref, op)
        if isinstance(dist, Wgmma):
            thr = self.c_partitioner(ref.shape[1])
            ident = f"cute.make_identity_tensor({cn.shape(ref.shape)})"
            self.w.line(f"tgd.store_predicated({self.array(value)}, {thr}.partition_C({tensor}), "
                        f"{thr}.partition_C({ident}), {bounds})", "elements past the array's edge are dropped")
        elif isinstance(dist, Simt):
            self.store_simt(op, tensor, value, bounds=bounds)
        else:
            raise unsupported(op, "copying between GMEM refs through registers",
                              "copy GMEM into SMEM (TMA or smem[...] = ref[...]) and store from SMEM with TMA")

    def distribution_fragment_shape(self, dist):
        if isinstance(dist, Broadcast):
            return self.distribution_fragment_shape(dist.target)
        if isinstance(dist, Wgmma):
            m, n = dist.shape
            return f"{self.c_partitioner(n)}.partition_shape_C(({m}, {n}))"
        if isinstance(dist, Simt):
            return cn.shape(dist.values)
        raise unsupported(None, "a register array that is only copied", "store loaded arrays directly into SMEM")

    def generically_read(self, buf):
        """True if some op reads `buf` with ordinary loads (so register stores must be ordered with a sync)."""
        for op in self.graph.walk():
            if op.kind in ("load", "dot"):
                for ref in op.operands:
                    if getattr(ref, "space", None) == MemorySpace.SMEM and self.buffers.get(id(root_ref(ref))) is buf:
                        return True
        return False


def broadcast_layout(shape, target, dims):
    """Source of the layout reading a `shape` tensor as a `target`-shaped one, its dimension i along the target's
    dimension dims[i]: it maps target coordinates to the tensor's own (column-major) index, 0 along broadcast dims."""
    strides, step = [0] * len(target), 1
    for size, d in zip(shape, dims):
        if size == target[d]:
            strides[d] = step
        step *= size
    return f"cute.make_layout({cn.shape(target)}, stride={cn.shape(strides)})"
