"""Static facts about graph values: where a ref view comes from and what is known about a scalar.

Shared by the verifier and the lowering. Everything here is conservative: an
unknown producer gives the weakest answer (a multiple of 1, no upper bound).
"""
import math

from . import dtypes, opdefs  # noqa: F401  (opdefs: the op kinds VIEW_OPS reads)
from .arch import WARPGROUP_THREADS
from .ir import Value
from .registry import kinds_where
from .types import MemorySpace, RefType, ScalarType


VIEW_OPS = kinds_where(lambda d: d.view)  # ops whose result is a window of their `ref` operand's memory


def root_ref(ref):
    """The allocated or parameter ref a chain of views (`view`, `transpose_ref`) was taken from."""
    while ref.producer is not None and ref.producer.kind in VIEW_OPS:
        ref = ref.producer.arg("ref")
    return ref


def alloc_of(ref):
    """The `alloc` op that created the memory behind `ref`, or None for a kernel parameter."""
    producer = root_ref(ref).producer
    return producer if producer is not None and producer.kind == "alloc" else None


def reads_initial_value(graph, ref):
    """Whether some op of `graph` may read allocated `ref` before overwriting it whole: False only when every op
    using it (through views too) follows, in its own region or an enclosing one, a store of the whole ref or a
    `wgmma(accumulate=False)` into it. Conservative: a write inside a loop or branch counts for that region only,
    and any other use counts as a read. The lowering skips an accumulator's zero fill when this is False."""
    def overwrites(op):
        if op.kind == "store":
            return op.arg("ref") is ref
        return op.kind == "wgmma" and op.arg("acc") is ref and not op.attrs["accumulate"]

    def uses(op):
        return any(isinstance(v, Value) and isinstance(v.type, RefType) and root_ref(v) is ref
                   for v in op.operands)

    def reads_in(region, written):
        for op in region.ops:
            if written:
                return False
            if overwrites(op):
                written = True
                continue
            if uses(op):
                return True
            if any(reads_in(inner, written) for inner in op.regions):
                return True
        return False

    return reads_in(graph.body, False)


def view_chain(ref):
    """The view ops (`view`, `transpose_ref`) between `ref` and its root, innermost (producing `ref`) first."""
    chain = []
    while ref.producer is not None and ref.producer.kind in VIEW_OPS:
        chain.append(ref.producer)
        ref = ref.producer.arg("ref")
    return chain


# ----------------------------------------------------------------------------- TMA boxes

def box_dims(gmem_shape, smem_shape):
    """For each dimension of a TMA copy's SMEM side, the dimension of its GMEM view that holds it, or None if
    the two do not fit. The GMEM view's other dimensions must have size 1: a box may have extents of 1 that the
    SMEM tile drops (a batch sliced with tg.ds(b, 1); a batch index drops the dimension from the view itself)."""
    dims, j = [], len(gmem_shape) - 1
    for size in reversed(tuple(smem_shape)):
        while j >= 0 and gmem_shape[j] != size and gmem_shape[j] == 1:
            j -= 1
        if j < 0 or gmem_shape[j] != size:
            return None
        dims.append(j)
        j -= 1
    if any(gmem_shape[k] != 1 for k in range(j + 1)):
        return None
    return tuple(reversed(dims))


# ----------------------------------------------------------------------------- MMA operand layouts

K_MAJOR = "K"    # K is contiguous: A stored [M, K] (row-major), B stored [N, K]
MN_MAJOR = "MN"  # M (A) or N (B) is contiguous: A stored [K, M], B stored [K, N] (row-major)


def operand_major(which, ref):
    """K_MAJOR or MN_MAJOR: which dimension of MMA operand `which` ('A' (M, K) or 'B' (K, N)) is contiguous.

    The tensor cores read 16-bit operands of either major-ness from shared memory;
    a transposed view (tg.transpose_ref) of a stored tile flips it.
    """
    k_dim = 1 if which == "A" else 0
    return K_MAJOR if ref.type.contiguous_dim == k_dim else MN_MAJOR


def known_multiple(x):
    """An int g such that `x` is provably a multiple of g at run time (0: `x` is always 0).

    Follows literals and `binop` mul, add, sub, rem, min, max and `select`;
    anything else (axis_index, loop indices, div) is only a multiple of 1.
    """
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return abs(x)
    if not isinstance(x, Value) or not isinstance(x.type, ScalarType) or x.producer is None:
        return 1
    op = x.producer
    if op.kind == "select":
        return math.gcd(known_multiple(op.arg("on_true")), known_multiple(op.arg("on_false")))
    if op.kind != "binop":
        return 1
    a, b = (known_multiple(o) for o in op.operands)
    kind = op.attrs["op"]
    if kind == "mul":
        return a * b
    if kind in ("add", "sub", "rem", "min", "max"):
        return math.gcd(a, b)
    return 1


def upper_bound(x):
    """The largest value `x` can take, for non-negative index arithmetic, or None if unknown.

    Known: literals, `a % c` with a literal c > 0 (at most c - 1), `min` with a
    bounded side and `select` of two bounded values.
    """
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if not isinstance(x, Value) or x.producer is None:
        return None
    op = x.producer
    if op.kind == "select":
        bounds = [upper_bound(op.arg("on_true")), upper_bound(op.arg("on_false"))]
        return None if None in bounds else max(bounds)
    if op.kind != "binop":
        return None
    a, b = op.operands
    kind = op.attrs["op"]
    if kind == "rem" and isinstance(b, int) and not isinstance(b, bool) and b > 0:
        bound_a = upper_bound(a)
        return b - 1 if bound_a is None else min(bound_a, b - 1)
    if kind == "min":
        bounds = [v for v in (upper_bound(a), upper_bound(b)) if v is not None]
        return min(bounds) if bounds else None
    return None


# ----------------------------------------------------------------------------- resources (verifier, lowering, model)

TMEM_CELL_BYTES = 4
REGISTER_BYTES = 4


def tmem_columns(ref_type):
    """32-bit TMEM columns a (lanes, n) TMEM ref occupies (f32: n; f16/bf16 packed two per column)."""
    return -(-ref_type.shape[-1] * dtypes.itemsize(ref_type.dtype) // TMEM_CELL_BYTES)


def live_accumulators(region):
    """The ACC allocs live together at the worst point of `region`: its own plus the worst nested region's."""
    own = [op for op in region.ops if op.kind == "alloc" and op.result.space == MemorySpace.ACC]
    nested = [live_accumulators(r) for op in region.ops for r in op.regions]
    worst = max(nested, key=lambda allocs: sum(a.result.type.nbytes for a in allocs), default=[])
    return own + worst


def registers(nbytes):
    """32-bit registers per CUDA thread that `nbytes` spread over one warpgroup occupy."""
    return -(-nbytes // (REGISTER_BYTES * WARPGROUP_THREADS))
