"""Every op kind of the graph IR, declared once (lang/registry.py says what a declaration holds).

Operands are named ("barrier?" may be left out, "*starts" takes the rest); `op.arg(name)` reads them. Effects
name the operand they touch; an op without effects and without regions only computes its results.
"""
from .registry import ASYNC, arrives, define, reads, writes
from .types import MemorySpace

HOPPER_ONLY = ("it is Hopper's (lower for sm_90a); on sm_100a accumulate in TMEM with tg.TMEM and tg.tcgen05_mma, "
               "or use tg.dot")
BLACKWELL_ONLY = "tcgen05 and tensor memory exist on Blackwell (sm_100a): lower for sm_100a"


def _scratch_here(arch_words, refused, other):
    """An `unsupported` predicate for alloc: refuses scratch in the memory space `refused` on this arch."""
    def reason(op):
        if op.results[0].type.space == refused:
            return f"{arch_words}; {other}"
        return None
    return reason


# ----------------------------------------------------------------------------- scalars and control flow

AXIS_INDEX = define("axis_index", "This block's, warpgroup's or warp's index along a named axis.",
                    attrs=("axis",), pure=True)
BINOP = define("binop", "Scalar arithmetic or comparison `a <op> b` (int32 wraps; div and rem truncate).",
               operands=("a", "b"), attrs=("op",), pure=True)
SELECT = define("select", "`on_true if cond else on_false` on scalars.",
                operands=("cond", "on_true", "on_false"), pure=True)
WHEN = define("when", "Runs its region where the traced bool `cond` holds.", operands=("cond",), regions=1)
FORI_LOOP = define("fori_loop", "`for i in range(lower, upper)` over its region, carrying values.",
                   operands=("lower", "upper", "*carries"), attrs=("unroll",), regions=1)
YIELD = define("yield", "Ends a fori_loop body with the next carries.", operands=("*values",))
CORE_MAP = define("core_map", "Runs its region once per warp of the warpgroup (WarpMesh).", attrs=("axis",),
                  regions=1)
SCOPE = define("scope", "A run_scoped region: its allocations live only inside it.", regions=1)

# ----------------------------------------------------------------------------- refs and scratch

ALLOC = define(
    "alloc", "Allocates a scratch ref (SMEM, TMEM, ACC or barriers) where the kernel or a scope starts.",
    attrs=("name",),
    unsupported={
        "sm_90a": _scratch_here("TMEM (tg.TMEM) exists on Blackwell", MemorySpace.TMEM, "lower for sm_100a"),
        "sm_100a": _scratch_here("a register accumulator tg.ACC is Hopper's WGMMA accumulator", MemorySpace.ACC,
                                 "on sm_100a accumulate in TMEM with tg.TMEM and tg.tcgen05_mma, or use tg.dot"),
    })
VIEW = define("view", "A window of `ref`: an index (dropping the dimension) or a slice per dimension.",
              operands=("ref", "*starts"), attrs=("sizes",), view=True, pure=True)
TRANSPOSE_REF = define("transpose_ref", "`ref` with its dimensions permuted (no data moves).",
                       operands=("ref",), attrs=("permutation",), view=True, pure=True)
LOAD = define("load", "Reads `ref` into a register array of the warpgroup.", operands=("ref",),
              effects=(reads("ref"),), warpgroup_wide=True)
LOAD_SCALAR = define(
    "load_scalar", "Reads the one int32 element of the 0-d GMEM or SMEM view `ref` into a traced scalar when the "
                   "op runs (every thread reads it; an element past a GMEM array's edge reads 0).",
    operands=("ref",), effects=(reads("ref"),))
STORE = define("store", "Writes the register array `value` into `ref`.", operands=("ref", "value"),
               effects=(writes("ref"),), warpgroup_wide=True)
STMATRIX = define(
    "stmatrix", "Writes `value`, a 16-bit array in the WGMMA accumulator layout, into the SMEM tile `ref` with "
                "stmatrix: each warp stores 8x8 matrices, four an instruction, instead of one element a thread.",
    operands=("ref", "value"), effects=(writes("ref"),), warpgroup_wide=True,
    unsupported={"sm_100a": "stmatrix stores arrays in Hopper's WGMMA accumulator layout; on sm_100a arrays come "
                            "from TMEM (tg.async_load_tmem): store them with ref[...] = array"})

# ----------------------------------------------------------------------------- register arrays

FULL = define("full", "A register array of one static value.", attrs=("shape", "value", "dtype"),
              warpgroup_wide=True, pure=True)
ASTYPE = define("astype", "Converts every element of `x` to `dtype`.", operands=("x",), attrs=("dtype",),
                warpgroup_wide=True, pure=True)
EWISE = define("ewise", "Elementwise `a <op> b` with numpy broadcasting.", operands=("a", "b"), attrs=("op",),
               warpgroup_wide=True, pure=True)
WHERE = define("where", "Elementwise select.", operands=("cond", "on_true", "on_false"), warpgroup_wide=True,
               pure=True)
ARRAY_SLICE = define("array_slice", "A static sub-array of `x`.", operands=("x",), attrs=("starts", "sizes"),
                     warpgroup_wide=True, pure=True,
                     unsupported={"sm_100a": "slices of register arrays are lowered for Hopper's WGMMA accumulator "
                                             "arrays (acc[...]); on sm_100a load the TMEM columns you need "
                                             "(acc_tmem.at[:, tg.ds(c, n)])"})

# ----------------------------------------------------------------------------- data movement

COPY_GMEM_TO_SMEM = define(
    "copy_gmem_to_smem", "A TMA load of `src` into `dst`, one arrival with its bytes on `barrier`.",
    operands=("src", "dst", "barrier"), attrs=("collective_axes", "partitioned_axis", "l2_promotion"),
    effects=(reads("src", "tma_load", ASYNC), writes("dst", "tma_load", ASYNC), arrives("barrier", "tma_load")),
    unsupported={"sm_90a": lambda op: ("a partitioned (2-CTA) TMA copy exists on Blackwell: lower for sm_100a"
                                       if op.attrs["partitioned_axis"] is not None else None),
                 "sm_100a": lambda op: ("l2_promotion is lowered for sm_90a; on sm_100a leave it None"
                                        if op.attrs["l2_promotion"] is not None else None)})
COPY_SMEM_TO_GMEM = define(
    "copy_smem_to_gmem", "A TMA store of `src` into `dst`, joining the thread's bulk group.",
    operands=("src", "dst"), attrs=("commit_group",),
    effects=(reads("src", "tma_store", ASYNC), writes("dst", "tma_store", ASYNC)))
COMMIT_SMEM = define("commit_smem", "Makes this thread's ordinary SMEM stores visible to TMA and the tensor cores "
                                    "(fence.proxy.async).")
WAIT_SMEM_TO_GMEM = define("wait_smem_to_gmem", "Waits until at most `n` bulk store groups are pending.",
                           attrs=("n", "read_only"), retires="tma_store")
ASYNC_LOAD_TMEM = define(
    "async_load_tmem", "Starts reading TMEM `src` into registers (tcgen05.ld).", operands=("src",),
    effects=(reads("src", "tmem_load", ASYNC),), warpgroup_wide=True, unsupported={"sm_90a": BLACKWELL_ONLY})
WAIT_LOAD_TMEM = define("wait_load_tmem", "Waits for this thread's TMEM loads (tcgen05.wait::ld).",
                        retires="tmem_load", unsupported={"sm_90a": BLACKWELL_ONLY})

# ----------------------------------------------------------------------------- synchronisation

COUNT_ARRIVAL = define(
    "count_arrival", "Counts the warpgroup's arrival at the int32 GMEM `counter` (one atomic add) and returns, to all "
                     "its threads, whether it was the `arrivals`-th (the counter then goes back to 0): a release of "
                     "the warpgroup's earlier GMEM stores and an acquire of those of the arrivals before it (GPU "
                     "scope).",
    operands=("counter",), attrs=("arrivals",), effects=(writes("counter"),), warpgroup_wide=True)

BARRIER_ARRIVE = define("barrier_arrive", "One arrival on `barrier` (per warpgroup; per warp inside a core_map).",
                        operands=("barrier",), effects=(arrives("barrier"),))
BARRIER_WAIT = define("barrier_wait", "Waits for a phase of `barrier` (implicit, or parity `phase`).",
                      operands=("barrier", "phase?"))
TCGEN05_COMMIT_ARRIVE = define(
    "tcgen05_commit_arrive", "Arrives on `barrier` once this thread's tcgen05 MMAs so far are done.",
    operands=("barrier",), attrs=("collective_axis",), effects=(arrives("barrier", "tcgen05"),),
    unsupported={"sm_90a": BLACKWELL_ONLY})
LAUNCH_DEPENDENTS = define(
    "launch_dependents", "Lets the kernel launched after this one as a dependent launch start placing its blocks "
                         "(griddepcontrol.launch_dependents): a hint, a block's first call counting; the dependent's "
                         "own wait still orders its memory after this whole kernel's.")
WGMMA_WAIT = define("wgmma_wait", "Waits until at most `n` WGMMA groups of the warpgroup are in flight.",
                    attrs=("n",), retires="wgmma", warpgroup_wide=True, unsupported={"sm_100a": HOPPER_ONLY})
SET_MAX_REGISTERS = define("set_max_registers", "setmaxnreg: the warpgroup's registers per thread become `n`.",
                           attrs=("n", "action"), unsupported={"sm_100a": HOPPER_ONLY})

# ----------------------------------------------------------------------------- compute

WGMMA = define(
    "wgmma", "An asynchronous Hopper WGMMA acc[M, N] += a[M, K] @ b[K, N] (`accumulate` False: acc = a @ b, the "
             "old acc unread).", operands=("acc", "a", "b"), attrs=("accumulate",),
    effects=(reads("a", "wgmma", ASYNC), reads("b", "wgmma", ASYNC), writes("acc", "wgmma", ASYNC)),
    warpgroup_wide=True, unsupported={"sm_100a": HOPPER_ONLY})
TCGEN05_MMA = define(
    "tcgen05_mma", "A Blackwell tcgen05 MMA acc (+)= a @ b into TMEM, arriving on `barrier` when done.",
    operands=("acc", "a", "b", "accumulate", "barrier?"), attrs=("collective_axis",),
    effects=(reads("a", "tcgen05", ASYNC), reads("b", "tcgen05", ASYNC), writes("acc", "tcgen05", ASYNC),
             arrives("barrier", "tcgen05")),
    unsupported={"sm_90a": BLACKWELL_ONLY})
DOT = define("dot", "acc + a @ b on CUDA cores, synchronously, into a register array.", operands=("a", "b", "acc?"),
             effects=(reads("a"), reads("b")), warpgroup_wide=True)

# ----------------------------------------------------------------------------- array math, printing, branching

UNARY = define("unary", "Elementwise `fn(x)` (exp, exp2, log, tanh, erf, sqrt, rsqrt, sigmoid, abs) of a float32 "
               "array.", operands=("x",), attrs=("fn",), warpgroup_wide=True, pure=True)
EXPAND_DIMS = define("expand_dims", "`x` with size-1 dimensions inserted at result positions `axes` (`x[None, :]`).",
                     operands=("x",), attrs=("axes",), warpgroup_wide=True, pure=True)
BROADCAST_TO = define("broadcast_to", "`x` repeated along its size-1 or missing leading dimensions to `shape`.",
                      operands=("x",), attrs=("shape",), warpgroup_wide=True, pure=True)
TRANSPOSE = define("transpose", "`x` with its dimensions permuted: result dimension i is dimension axes[i].",
                   operands=("x",), attrs=("axes",), warpgroup_wide=True, pure=True)
RESHAPE = define("reshape", "The elements of `x` in row-major order, in `shape`.", operands=("x",),
                 attrs=("shape",), warpgroup_wide=True, pure=True)
REDUCE = define("reduce", "The `kind` ('sum', 'max', 'min') reduction of `x` along `axes`.", operands=("x",),
                attrs=("kind", "axes", "keepdims"), warpgroup_wide=True, pure=True)
DEBUG_PRINT = define("debug_print", "Prints `fmt` filled with the scalars `args`, once per warpgroup (per warp "
                     "inside a core_map).", operands=("*args",), attrs=("fmt",))
WHILE_LOOP = define("while_loop", "`while cond(carries): carries = body(carries)`: a cond and a body region, each "
                    "ending with a yield.", operands=("*carries",), regions=2)
COND = define("cond", "Runs the first region where `pred` holds, else the second, on `operands`; results are what "
              "it yields.", operands=("pred", "*operands"), regions=2)
