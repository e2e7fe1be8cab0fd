"""Blackwell (sm_100a) lowering: tcgen05 MMAs into tensor memory, TMEM loads, 2-CTA MMAs and partitioned TMA.

`Sm100Ops` is a mixin placed before `emit.KernelEmitter` (see
`emit.Sm100Emitter`): it registers the lowering rules of the tcgen05 ops, of
barrier waits and arrivals (with the tcgen05 fences) and of TMA loads (with the
2-CTA partitioned ones), and extends the common prologue and kernel end with
the TMEM allocation.
Scalars, control flow, SMEM buffers, register arrays and plain or multicast TMA
copies are the common machinery. Hopper's ops (wgmma, tg.ACC, setmaxnreg) have
no rule here: their declarations (lang/opdefs.py) say why.

There is no Blackwell GPU in this project: these kernels are checked by
compiling them for sm_100a and reading the instructions in their PTX and SASS
(tests/lower/test_sm100.py), while the numpy interpreter is the reference for
what they compute. Nothing here has run on hardware.
"""
import math
from dataclasses import dataclass

from ..lang import dtypes
from ..lang.analysis import operand_major, root_ref
from ..lang.arch import WARPGROUP_THREADS as WARPGROUP
from ..lang.tensorcore import TCGEN05
from ..lang.types import MemorySpace
from . import cute_names as cn
from . import tmem
from .distribution import TmemLoad
from .plan import resolve_view, unsupported
from .rules import BOTH, SM100, lowering

LOAD_REPETITION = 64  # widest tcgen05.ld 32x32b repetition used: 64 columns, 64 registers per thread

SM100_NAMES = ("tcgen05", "sm100_helpers", "pipeline", "tcgen05_fence", "tmem_allocator", "tmem_base")
SM100_IMPORTS = ("import cuda.bindings.driver as cuda", "import cutlass", "import cutlass.cute as cute",
                 "import cutlass.pipeline as pipeline", "import cutlass.utils.blackwell_helpers as sm100_helpers",
                 "from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05, warpgroup", "",
                 "from tilegemm.lower import device as tgd", "from tilegemm.lower import tcgen05_fence")


@dataclass(frozen=True)
class TmemCopy:
    """Prologue variables of the tcgen05.ld (32x32b) copy of one TMEM tile shape: thread t reads lane t."""
    tiled: str
    thr: str
    frag_shape: str


class Sm100Ops:
    """Op handlers for tcgen05 MMAs, commits, TMEM loads and 2-CTA partitioned copies; TMEM set-up and release;
    the TMA descriptor prefetch."""

    def __init__(self, graph, arch, barrier_timeout=None):
        super().__init__(graph, arch, barrier_timeout)
        self.tmem_buffers = {}     # id(TMEM alloc result) -> tmem.TmemBuffer
        self.tmem_copies = {}      # (rows, columns) -> TmemCopy
        self.pair_tma_atoms = {}   # key -> (atom var, coords var) of a 2-CTA TMA load
        self.tcgen05_mmas = {}     # (dtypes, majors, pair, shape) -> prologue tiled MMA variable

    # ------------------------------------------------------------------ TMEM allocation

    def declare_tmem(self, op):
        column = sum(b.columns for b in self.tmem_buffers.values())
        self.tmem_buffers[id(op.result)] = tmem.place(op, self.ref_names[id(op.result)], column)

    def two_cta_tmem(self):
        """True when a TMEM ref is collective: the pair allocates and frees with tcgen05 cta_group::2."""
        return any(b.collective for b in self.tmem_buffers.values())

    def extra_storage_fields(self):
        if not self.tmem_buffers:
            return []
        fields = [("tmem_address", "cute.struct.MemRange[cutlass.Int32, 2]", "written by tcgen05.alloc")]
        if self.two_cta_tmem():
            fields.append(("tmem_dealloc", "cute.struct.MemRange[cutlass.Int64, 1]",
                           "mbarrier: the two blocks of a pair free their TMEM together"))
        return fields

    def declare_scratch(self):
        super().declare_scratch()
        if self.tmem_buffers:
            self.allocate_tmem()

    def allocate_tmem(self):
        """Prologue: warp 0 allocates TMEM for every tg.TMEM; after a block-wide barrier every thread reads
        its address."""
        p = self.prologue
        threads = self.graph.config["num_threads"]
        columns = tmem.allocation_columns(self.tmem_buffers.values())
        pair = self.two_cta_tmem()
        extra = ", is_two_cta=True, two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc.data_ptr()" if pair else ""
        p.comment("tensor memory: warp 0 allocates it for every tg.TMEM; every thread then reads its address")
        p.line(f"tmem_allocator = cutlass.memory.TmemAllocator(storage.tmem_address.data_ptr(), "
               f"barrier_for_retrieve=pipeline.NamedBarrier(barrier_id={threads + 1}, "
               f"num_threads={WARPGROUP * threads}){extra})")
        p.line(f"tmem_allocator.allocate({columns})",
               "tcgen05.alloc" + (".cta_group::2: both blocks of the pair" if pair else ""))
        p.line("tmem_allocator.relinquish_alloc_permit()", "this block allocates no more TMEM")
        p.line("tcgen05_fence.before_thread_sync()")
        p.line("tmem_allocator.wait_for_alloc()", "block-wide barrier: the address is in shared memory now")
        p.line("tcgen05_fence.after_thread_sync()")
        p.line("tmem_base = tmem_allocator.retrieve_ptr(cutlass.Float32)")
        for b in self.tmem_buffers.values():
            start = f"tmem_base + {b.column}" if b.column else "tmem_base"
            p.line(f"{b.name} = cute.make_tensor({start}, {tmem.tile_layout(tmem.LANES, b.columns)})",
                   f"{b.ref_type}, {b.loc}: TMEM columns {b.column}..{b.column + b.columns - 1}")
        self.features.add("tmem")

    def finish_kernel(self):
        if not self.tmem_buffers:
            super().finish_kernel()
            return
        self.w.line("tcgen05_fence.before_thread_sync()", "every tcgen05 operation of this thread is done")
        super().finish_kernel()
        if self.cluster_size() == 1:
            self.w.line("cute.arch.sync_threads()", "no thread still reads TMEM")
        self.w.line("tcgen05_fence.after_thread_sync()")
        self.w.line("tmem_allocator.free(tmem_base)", "warp 0 frees the TMEM"
                    + (" (after the other block of the pair is done with it)" if self.two_cta_tmem() else ""))

    # ------------------------------------------------------------------ TMEM views and loads

    def tmem_view(self, ref, op):
        """(source of the view's first-column pointer, (rows, columns)) of a TMEM ref."""
        view = resolve_view(ref)
        buf = self.tmem_buffers[id(view.root)]
        lanes, cols = view.dims
        if lanes.is_index or cols.is_index:
            raise unsupported(op, "a TMEM view that indexes away a dimension",
                              "slice TMEM with tg.ds or static slices, e.g. acc_tmem.at[:, tg.ds(c, n)]")
        if lanes.static_start != 0 or lanes.size != tmem.LANES:
            raise unsupported(op, f"a TMEM view of {lanes.size} of the {tmem.LANES} lanes",
                              "take views over all lanes and slice the columns, e.g. acc_tmem.at[:, tg.ds(c, n)]")
        start = self.index_sum(cols.terms)
        ptr = f"{buf.name}.iterator" if start == "0" else f"{buf.name}.iterator + ({start})"
        return ptr, view.shape

    def tmem_copy(self, shape, op):
        """The TmemCopy for (128, n) tiles, written into the prologue on first use."""
        rows, cols = shape
        if rows != tmem.LANES:
            raise unsupported(op, f"a {rows}-row array read from TMEM", f"read all {tmem.LANES} lanes")
        if shape not in self.tmem_copies:
            repetition = math.gcd(cols, LOAD_REPETITION)
            stem = f"tmem_load_{rows}x{cols}"
            tiled, thr, frag = (self.names.fresh(x) for x in (stem, f"thr_{stem}", f"{stem}_regs_shape"))
            p = self.prologue
            p.line(f"{tiled} = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x"
                   f"{repetition}), cutlass.Float32), cute.make_tensor(tmem_base, {tmem.tile_layout(rows, cols)}))",
                   f"tcgen05.ld 32x32b, {repetition} columns per instruction")
            p.line(f"{thr} = {tiled}.get_slice(thread_in_warpgroup)", "thread t of the warpgroup reads TMEM lane t")
            p.line(f"{frag} = {thr}.partition_D(cute.make_identity_tensor({cn.shape(shape)})).shape")
            self.tmem_copies[shape] = TmemCopy(tiled, thr, frag)
        return self.tmem_copies[shape]

    def start_tmem_load(self, op, ref):
        """Writes the tcgen05.ld of a TMEM view into a register fragment; binds op's result to the fragment."""
        ptr, shape = self.tmem_view(ref, op)
        copy = self.tmem_copy(shape, op)
        regs = self.names.fresh(f"{self.ref_name(ref)}_regs")
        self.w.line(f"{regs} = cute.make_rmem_tensor({copy.frag_shape}, {cn.cutlass_type(ref.dtype)})")
        self.w.line(f"cute.copy({copy.tiled}, {copy.thr}.partition_S(cute.make_tensor({ptr}, "
                    f"{tmem.tile_layout(*shape)})), {regs})", "tcgen05.ld: registers are valid after tcgen05.wait::ld")
        self.expr[id(op.result)] = f"{regs}.load()"
        self.features.add("tcgen05.ld")

    @lowering("async_load_tmem", SM100)
    def op_async_load_tmem(self, op):
        self.mark(op)
        self.start_tmem_load(op, op.arg("src"))

    @lowering("wait_load_tmem", SM100)
    def op_wait_load_tmem(self, op):
        self.mark(op)
        self.w.line("cute.arch.fence_view_async_tmem_load()", "tcgen05.wait::ld")

    def load_tmem(self, op):
        """array = tmem_ref[...]: tcgen05.ld and its wait."""
        self.mark(op)
        self.start_tmem_load(op, op.arg("ref"))
        self.w.line("cute.arch.fence_view_async_tmem_load()", "a TMEM load is synchronous: tcgen05.wait::ld")

    def accumulator_fragment_shape(self, dist):
        """The per-thread fragment of a tcgen05.ld array: thread t holds row t."""
        return self.tmem_copy(dist.shape, None).frag_shape

    def accumulator_partition(self, dist, tensor, op):
        """This thread's part of an array-shaped tensor laid out as a tcgen05.ld array (thread t: row t)."""
        if not isinstance(dist, TmemLoad):
            raise unsupported(op, "an array in a WGMMA accumulator layout on sm_100a", "use TMEM loads")
        return f"{self.tmem_copy(dist.shape, op).thr}.partition_D({tensor})"

    # ------------------------------------------------------------------ tcgen05 MMA and commit

    def pair_axis(self, axis, op, what):
        """Checks that the 2-CTA pair is the first cluster axis (the hardware pairs ranks 2i and 2i+1)."""
        names = self.graph.config["cluster_names"]
        if not names or names[0] != axis:
            raise unsupported(op, f"{what} over the cluster axis {axis!r}",
                              "make the pair the first cluster axis: the hardware pairs the blocks whose "
                              "cluster ranks differ in the lowest bit")
        self.features.add("2cta")

    @lowering("tcgen05_mma", SM100)
    def op_tcgen05_mma(self, op):
        acc, a, b, accumulate = (op.arg(name) for name in ("acc", "a", "b", "accumulate"))
        axis = op.attrs["collective_axis"]
        self.mark(op)
        if axis is not None:
            self.pair_axis(axis, op, "a 2-CTA tcgen05_mma")
        m, n = acc.shape
        pair = 2 if axis is not None else 1
        ptr, _ = self.tmem_view(acc, op)
        a_major, b_major = operand_major("A", a), operand_major("B", b)
        k = TCGEN05.k(a.dtype)
        mma = self.tcgen05_tiled_mma(a.dtype, b.dtype, acc.dtype, a_major, b_major, pair, (m, n))
        a_frag, b_frag = (self.operand_descriptors(operand, ref, op, mma,
                                                   lambda t: f"cute.tiled_divide({t}, ({rows}, {k}))")
                          for operand, ref, rows in (("A", a, a.shape[0]), ("B", b, b.shape[1])))
        with self.single_warp():
            acc_t = self.names.fresh("acc")
            self.w.line(f"{acc_t} = cute.make_tensor({ptr}, {mma}.make_fragment_C({mma}.partition_shape_C(("
                        f"{pair * m}, {n}))).layout)", "the accumulator in TMEM")
            self.w.line(f"{mma}.set(tcgen05.Field.ACCUMULATE, {self.scalar(accumulate)})")
            with self.w.block(f"for k_block in cutlass.range_constexpr({a.shape[1] // k}):"):
                self.w.line(f"cute.gemm({mma}, {acc_t}, {a_frag}, {b_frag}, {acc_t})")
                self.w.line(f"{mma}.set(tcgen05.Field.ACCUMULATE, True)")
            if op.arg("barrier") is not None:
                self.tcgen05_commit(op.arg("barrier"), axis)
        self.features.add("tcgen05.mma")

    def tcgen05_tiled_mma(self, a_dtype, b_dtype, acc_dtype, a_major, b_major, pair, shape):
        """Prologue variable: the tiled tcgen05 MMA of an (M, N) = `shape` accumulator per block with the given
        dtypes and operand major-ness, over the block pair when `pair` is 2. Its ACCUMULATE field is set
        where it multiplies."""
        (m, n), k = shape, TCGEN05.k(a_dtype)
        key = (a_dtype, b_dtype, acc_dtype, a_major, b_major, pair, shape)
        if key not in self.tcgen05_mmas:
            mma = self.names.fresh(f"mma_{pair * m}x{n}")
            self.prologue.line(f"{mma} = sm100_helpers.make_trivial_tiled_mma({cn.cutlass_type(a_dtype)}, "
                               f"{cn.cutlass_type(b_dtype)}, OperandMajorMode.{a_major}, OperandMajorMode.{b_major}, "
                               f"{cn.cutlass_type(acc_dtype)}, tcgen05.CtaGroup.{'TWO' if pair == 2 else 'ONE'}, "
                               f"({pair * m}, {n}))",
                               f"tcgen05.mma {pair * m}x{n}x{k}" + (" over the block pair" if pair == 2 else ""))
            self.tcgen05_mmas[key] = mma
        return self.tcgen05_mmas[key]

    @lowering("tcgen05_commit_arrive", SM100)
    def op_tcgen05_commit_arrive(self, op):
        axis = op.attrs["collective_axis"]
        self.mark(op)
        if axis is not None:
            self.pair_axis(axis, op, "a 2-CTA tcgen05_commit_arrive")
        with self.single_warp():
            self.tcgen05_commit(op.arg("barrier"), axis)

    def tcgen05_commit(self, barrier, axis):
        """tcgen05.commit: the barrier (in both blocks of the pair if `axis`) gets one arrival when this
        thread's earlier MMAs are done."""
        bars, i = self.barrier_ptr(barrier)
        ptr = bars.name if i == "0" else f"{bars.name} + {i}"
        if axis is None:
            text = f"tcgen05.commit({ptr})"
        else:
            mask, _ = self.multicast_vars((axis,))
            text = f"tcgen05.commit({ptr}, {mask}, tcgen05.CtaGroup.TWO)"
        with self.w.block("with cute.arch.elect_one():"):
            self.w.line(text, "arrives when the MMAs issued so far are done"
                        + (", on both blocks' barriers" if axis is not None else ""))
        self.features.add("tcgen05.commit")

    # ------------------------------------------------------------------ barriers ordering tcgen05 operations

    def orders_tensor_core(self, barrier):
        bars, _ = self.barrier_ptr(barrier)
        return bars.spec.orders_tensor_core

    @lowering("barrier_wait", SM100)
    def op_barrier_wait_fenced(self, op):
        """A barrier wait, after which a barrier ordering the tensor core orders this thread's tcgen05 ops."""
        self.barrier_wait(op)
        if self.orders_tensor_core(op.arg("barrier")):
            self.w.line("tcgen05_fence.after_thread_sync()", "tcgen05 operations below are ordered after the wait")

    @lowering("barrier_arrive", SM100)
    def op_barrier_arrive_fenced(self, op):
        """A barrier arrival, before which a barrier ordering the tensor core orders this thread's tcgen05 ops."""
        if self.orders_tensor_core(op.arg("barrier")):
            self.mark(op)
            self.w.line("tcgen05_fence.before_thread_sync()", "tcgen05 operations above (TMEM loads) are ordered "
                        "before the arrival")
        self.barrier_arrive(op)

    # ------------------------------------------------------------------ 2-CTA partitioned TMA loads

    @lowering("copy_gmem_to_smem", SM100)
    def op_copy_gmem_to_smem_partitioned(self, op):
        """A TMA load; a partitioned one loads this block's part of the pair's tile (cta_group::2)."""
        part_dim = op.attrs["partitioned_axis"]
        if part_dim is None:
            self.copy_gmem_to_smem(op)
            return
        src, dst, barrier = op.arg("src"), op.arg("dst"), op.arg("barrier")
        axes = op.attrs["collective_axes"]
        self.mark(op)
        if len(axes) != 1 or self.collective_size(axes, op) != 2:
            raise unsupported(op, f"a partitioned copy over the cluster axes {axes}",
                              "partition over one cluster axis of 2 blocks (the 2-CTA pair)")
        (axis,) = axes
        self.pair_axis(axis, op, "a partitioned copy")
        s_var, buf, s_view, kept = self.smem_view(dst, op)
        self.require_whole(op, s_view, buf, "TMA destination")
        order = [s_view.kept.index(d) for d in kept]
        box = [dst.shape[k] for k in order]
        index_dims = [d for d, s in enumerate(s_view.dims) if s.is_index]
        atom, coords = self.pair_tma_atom(op, root_ref(src), buf, index_dims, order, box)
        rank = self.axis_var(axis, op)
        tile = self.partitioned_gmem_tile(src, order, box, coords, part_dim, f"{rank} * {dst.shape[part_dim]}", op)
        bars, i = self.barrier_ptr(barrier)
        ptr = bars.name if i == "0" else f"{bars.name} + {i}"
        nbytes = math.prod(dst.shape) * dtypes.itemsize(dst.dtype)
        g_var, s_part, g_part = (self.names.fresh(x) for x in ("gmem_tile", "smem_part", "gmem_part"))
        self.w.line(f"{g_var} = {tile}", f"this block's part {rank} of the pair's tile along dimension {part_dim}")
        n = len(kept)
        self.w.line(f"{s_part}, {g_part} = cpasync.tma_partition({atom}, 0, cute.make_layout(1), "
                    f"cute.group_modes({s_var}, 0, {n}), cute.group_modes({g_var}, 0, {n}))")
        with self.single_warp():
            with self.w.block(f"if {rank} == 0:", "only the leader's barrier tracks the copy"):
                with self.w.block("with cute.arch.elect_one():"):
                    self.w.line(f"cute.arch.mbarrier_arrive_and_expect_tx({ptr}, {2 * nbytes})",
                                "one arrival, and the bytes of both blocks' parts")
            self.w.line(f"cute.copy({atom}, {g_part}, {s_part}, tma_bar_ptr={ptr})",
                        "cta_group::2: completes on the leader's barrier")
        self.features.add("tma")

    def pair_tma_atom(self, op, param, buf, index_dims, order, box):
        """(atom, coordinate tensor) kernel parameters of a 2-CTA (cta_group::2) TMA load descriptor."""
        key = (id(param), buf.name, tuple(index_dims), tuple(order), tuple(box))
        if key not in self.pair_tma_atoms:
            gmem = self.host_tensor(param, order)
            stem = f"tma_pair_load_{buf.name}"
            atom, coords = self.names.fresh(stem), self.names.fresh(f"{stem}_coords")
            self.host.line(f"{atom}, {coords} = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp("
                           f"tcgen05.CtaGroup.TWO), {gmem}, {buf.stage_layout_expr(index_dims)}, {cn.shape(box)})",
                           f"{op.loc}")
            self.kernel_params += [(atom, "cute.CopyAtom"), (coords, "cute.Tensor")]
            self.pair_tma_atoms[key] = (atom, coords)
        return self.pair_tma_atoms[key]

    def partitioned_gmem_tile(self, ref, order, box, coords_tensor, part_dim, offset, op):
        """Source of the TMA coordinate tile of this block's part of a GMEM view (dims in `order`):
        a `box` at the view's start shifted by `offset` along `part_dim`."""
        view = resolve_view(ref)
        if any(s.is_index for s in view.dims):
            raise unsupported(op, "a TMA copy of a GMEM view that indexes away a dimension",
                              "slice every dimension of the array with tg.ds (a box may have size 1)")
        starts = [self.index_sum(view.dims[d].terms) for d in order]
        starts = [f"{s} + {offset}" if d == part_dim else s for d, s in zip(order, starts)]
        origin = f"cute.domain_offset(({', '.join(starts)}{',' if len(starts) == 1 else ''}), {coords_tensor})"
        zeros = ", ".join("0" for _ in order)
        return f"cute.local_tile({origin}, {cn.shape(box)}, ({zeros}{',' if len(order) == 1 else ''}))"
