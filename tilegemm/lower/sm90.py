"""Hopper (sm_90a) lowering: WGMMA, register accumulators (tg.ACC) and their arrays, stmatrix, setmaxnreg.

A mixin of `emit.KernelEmitter`: it relies on the emitter's writers (`self.w`,
`self.prologue`, `self.host`), value expressions and scratch tables.
"""
from ..lang import dtypes
from ..lang.analysis import K_MAJOR, MN_MAJOR, operand_major, reads_initial_value, root_ref
from ..lang.arch import STMATRIX_ROWS
from ..lang.tensorcore import WGMMA
from . import cute_names as cn
from .distribution import Wgmma
from .plan import resolve_view, unsupported
from .rules import SM90, lowering


class Sm90Ops:
    """Op handlers and helpers for Hopper's tensor cores and register accumulators."""

    def init_sm90(self):
        self.accs = {}          # id(ACC alloc result) -> register tensor variable (a WGMMA C fragment)
        self.mmas = {}          # (a dtype, b dtype, acc dtype, n, a major, b major) -> (mma var, thr var)
        self.stmatrix_copies = {}   # (dtype, n) -> (tiled copy var, thread slice var)

    # ------------------------------------------------------------------ WGMMA

    def tiled_mma(self, a_dtype, b_dtype, acc_dtype, n, a_major=K_MAJOR, b_major=MN_MAJOR):
        """Prologue variables (tiled MMA, this thread's slice) for an m64nNkK WGMMA with the given dtypes and
        operand major-ness (analysis.K_MAJOR / MN_MAJOR); K is the table's for the operand type."""
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
                   f"WGMMA m64n{n}k{WGMMA.k(a_dtype)}, A {a_words}-major, B {b_words}-major")
            p.line(f"{mma}.set(warpgroup.Field.ACCUMULATE, True)")
            p.line(f"{thr} = {mma}.get_slice(thread_in_warpgroup)")
            self.mmas[key] = (mma, thr)
        return self.mmas[key]

    def wgmma_of(self, op):
        """(tiled MMA, thread slice) of a `wgmma` op: its dtypes, its N and its operands' major-ness."""
        acc, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
        a_major = operand_major("A", a)
        return self.tiled_mma(a.dtype, b.dtype, acc.dtype, acc.shape[1], a_major, operand_major("B", b))

    def c_layout_mma(self, n):
        """(tiled MMA, thread slice) whose C partition lays out an (M, n) array like a WGMMA accumulator."""
        for key, pair in self.mmas.items():
            if key[3] == n:
                return pair
        return self.tiled_mma(dtypes.float16, dtypes.float16, dtypes.float32, n)

    def c_partitioner(self, n):
        """A thread slice whose partition_C lays out an (M, n) array like a WGMMA accumulator."""
        return self.c_layout_mma(n)[1]

    def declare_accumulator(self, op):
        ref = op.result
        m, n = ref.shape
        users = [u for u in self.graph.walk() if u.kind == "wgmma" and root_ref(u.arg("acc")) is ref]
        _, thr = self.wgmma_of(users[0]) if users else self.tiled_mma(dtypes.float16, dtypes.float16, ref.dtype, n)
        name = self.ref_names[id(ref)]
        self.w.line(f"{name} = cute.make_rmem_tensor({thr}.partition_shape_C(({m}, {n})), "
                    f"{cn.cutlass_type(ref.dtype)})", f"{ref.type}: registers of this warpgroup")
        if reads_initial_value(self.graph, ref):   # an ACC starts at zero; skipped where every use overwrites it
            self.w.line(f"{name}.fill(0.0)")
        self.accs[id(ref)] = name

    def accumulator(self, ref, op=None):
        """The register tensor variable of an ACC ref."""
        if ref.producer is not None and ref.producer.kind == "view":
            raise unsupported(op or ref.producer, "a view of an accumulator (acc.at[...])",
                              "use the whole ACC ref, or slice the loaded array (acc[...][rows, cols])")
        return self.accs[id(ref)]

    @lowering("wgmma", SM90)
    def op_wgmma(self, op):
        acc_ref, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
        self.mark(op)
        acc = self.accumulator(acc_ref, op)
        mma, thr = self.wgmma_of(op)
        a_frag, b_frag = (self.operand_descriptors(operand, ref, op, mma, lambda t: f"{thr}.partition_{operand}({t})")
                          for operand, ref in (("A", a), ("B", b)))
        self.w.line("warpgroup.fence()")
        overwrite = not op.attrs["accumulate"]
        if overwrite:
            self.w.line(f"{mma}.set(warpgroup.Field.ACCUMULATE, False)", "acc = a @ b: the first K block's "
                        "instruction does not read the accumulator (scale-d 0)")
        k_blocks = a.shape[1] // WGMMA.k(a.dtype)
        with self.w.block(f"for k_block in cutlass.range_constexpr({k_blocks}):"):
            self.w.line(f"cute.gemm({mma}, {acc}, {a_frag}, {b_frag}, {acc})")
            if overwrite:
                self.w.line(f"{mma}.set(warpgroup.Field.ACCUMULATE, True)")
        self.w.line("warpgroup.commit_group()", "one WGMMA group; completes by wgmma_wait")
        self.features.add("wgmma")

    @lowering("wgmma_wait", SM90)
    def op_wgmma_wait(self, op):
        self.mark(op)
        self.w.line(f"warpgroup.wait_group({op.attrs['n']})")

    @lowering("set_max_registers", SM90)
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

    def load_accumulator(self, op):
        """array = acc[...]: the accumulator's register fragment."""
        ref = op.arg("ref")
        self.mark(op)
        self.bind_array(op.result, f"{self.accumulator(ref)}.load()", hint=f"{self.ref_name(ref)}_values")

    def accumulator_fragment_shape(self, dist):
        """The per-thread fragment of an array in the WGMMA accumulator layout."""
        m, n = dist.shape
        return f"{self.c_partitioner(n)}.partition_shape_C(({m}, {n}))"

    def accumulator_partition(self, dist, tensor, op):
        """This thread's part of an array-shaped tensor laid out as a WGMMA accumulator."""
        return f"{self.c_partitioner(dist.shape[1])}.partition_C({tensor})"

    # ------------------------------------------------------------------ stmatrix

    @lowering("stmatrix", SM90)
    def op_stmatrix(self, op):
        """The array's accumulator fragment, converted to its 16-bit type, stored by 8x8 matrices (stmatrix)."""
        ref, value = op.arg("ref"), op.arg("value")
        self.mark(op)
        dist = self.dists[id(value)]
        if not isinstance(dist, Wgmma):
            raise unsupported(op, f"stmatrix of a {value.type} that is not in the WGMMA accumulator layout",
                              "store arrays computed from an accumulator (acc[...]) with tg.stmatrix; store other "
                              "arrays with ref[...] = array")
        copy, thr = self.stmatrix_copy(value.dtype, dist.shape[1], transposed=resolve_view(ref).transposed)
        fragment = self.names.fresh(f"{self.ref_name(root_ref(ref))}_fragment")
        self.w.line(f"{fragment} = cute.make_rmem_tensor({self.accumulator_fragment_shape(dist)}, "
                    f"{cn.cutlass_type(value.dtype)})")
        self.w.line(f"{fragment}.store({self.array(value)})")
        with self.register_store(op, ref) as var:
            self.w.line(f"cute.copy({copy}, {copy}.retile({fragment}), {thr}.partition_D({var}))",
                        "the fragment's registers, 8x8 matrices at a time")
        self.features.add("stmatrix")

    def stmatrix_copy(self, dtype, n, transposed=False):
        """Prologue variables (tiled copy, this thread's slice) storing an (M, n) WGMMA accumulator fragment of
        `dtype` with stmatrix: four 8x8 matrices an instruction where n allows, else two; `transposed` (into a
        transposed view) with .trans, each matrix row 8 of the accumulator's rows. The copy is tiled like the
        accumulator (make_tiled_copy_C), so its retiled registers are the fragment's in order."""
        key = (dtype, n, transposed)
        if key not in self.stmatrix_copies:
            stem = f"stmatrix{'_trans' if transposed else ''}_{n}"
            copy, thr = self.names.fresh(stem), self.names.fresh(f"thr_{stem}")
            matrices = 4 if n % (2 * STMATRIX_ROWS) == 0 else 2
            mma, _ = self.c_layout_mma(n)
            p = self.prologue
            p.line(f"{copy} = cute.make_tiled_copy_C(cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp("
                   f"{transposed}, {matrices}), {cn.cutlass_type(dtype)}), {mma})",
                   f"stmatrix.x{matrices}{'.trans' if transposed else ''}: 8x8 matrices of the WGMMA accumulator "
                   "layout" + (", each stored transposed" if transposed else ""))
            p.line(f"{thr} = {copy}.get_slice(thread_in_warpgroup)")
            self.stmatrix_copies[key] = (copy, thr)
        return self.stmatrix_copies[key]

    @lowering("array_slice", SM90)
    def op_array_slice(self, op):
        self.mark(op)
        (src,) = op.operands
        m, n = src.type.shape
        (r0, c0), (h, w) = op.attrs["starts"], op.attrs["sizes"]
        self.bind_array(op.result, f"tgd.accumulator_slice({self.array(src)}, ({m}, {n}), ({r0}, {c0}), ({h}, {w}))",
                        hint="part")
