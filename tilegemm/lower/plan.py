"""Static facts the lowering needs before it emits code: names, view composition, buffer and barrier roles.

Everything here reads the graph only. Unsupported constructs raise
tg.CompileError naming the op's source line and what is supported.
"""
import math
from dataclasses import dataclass

from ..errors import CompileError
from ..lang.analysis import VIEW_OPS, known_multiple, operand_major, root_ref
from ..lang.tensorcore import instruction_of
from ..lang.types import MemorySpace


class Unlowerable(CompileError):
    """What the CuTe DSL lowering cannot express, found while it plans a kernel; the verifier reports it as a
    tg.KernelError at `loc`, the user's line (lang/verify.py)."""

    def __init__(self, loc, reason):
        self.loc, self.reason = loc, reason
        super().__init__(f"{loc}: {reason}" if loc is not None else reason)


def unsupported(op, what, supported):
    """An Unlowerable for `op` (an op, or the graph for kernel-wide limits): `what` is not lowered; `supported`
    says what is."""
    return Unlowerable(getattr(op, "loc", None), f"{what} is not supported by the CuTe DSL lowering; {supported}")


# ----------------------------------------------------------------------------- views

@dataclass(frozen=True)
class DimSel:
    """How a view selects one dimension of its root ref: an index (dropped) or a slice of `size`.

    `terms` are the addends (ints or scalar Values) of the start in the root's coordinates.
    """
    terms: tuple
    size: int = None

    @property
    def is_index(self):
        return self.size is None

    @property
    def static_start(self):
        """The start as an int when every term is a literal, else None."""
        if all(isinstance(t, int) for t in self.terms):
            return sum(self.terms)
        return None

    def multiple(self):
        """An int the start is provably a multiple of (0 when it is always 0)."""
        g = 0
        for t in self.terms:
            g = math.gcd(g, known_multiple(t))
        return g


@dataclass(frozen=True)
class RefView:
    """A ref as a selection of its root (a kernel parameter or an alloc): one DimSel per root dimension.

    `order` lists the root dimension each dimension of the ref is, when a transpose
    (tg.transpose_ref) permuted them; None: the kept root dimensions in order.
    """
    root: object
    dims: tuple
    order: tuple = None

    @property
    def kept(self):
        """Root dimensions that remain in the view, in order."""
        return tuple(d for d, s in enumerate(self.dims) if not s.is_index)

    @property
    def axes(self):
        """The root dimension of each dimension of the ref, in the ref's order."""
        return self.kept if self.order is None else self.order

    @property
    def transposed(self):
        return self.order is not None

    @property
    def shape(self):
        return tuple(self.dims[d].size for d in self.axes)

    @property
    def is_whole(self):
        """True when every kept dimension is taken whole from offset 0."""
        return all(s.static_start == 0 and s.size == self.root.shape[d]
                   for d, s in enumerate(self.dims) if not s.is_index)


def is_zero(x):
    """True for the literal 0 (never compares traced values, whose == records an op)."""
    return isinstance(x, int) and x == 0


def resolve_view(ref):
    """Composes the chain of view ops (`view`, `transpose_ref`) producing `ref` into one RefView on its root."""
    op = ref.producer
    if op is None or op.kind not in VIEW_OPS:
        return RefView(ref, tuple(DimSel((0,), n) for n in ref.shape))
    parent = resolve_view(op.arg("ref"))
    if op.kind == "transpose_ref":
        return _ordered(parent.root, parent.dims, tuple(parent.axes[p] for p in op.attrs["permutation"]))
    starts, sizes = op.arg("starts"), op.attrs["sizes"]
    dims = list(parent.dims)
    for k, d in enumerate(parent.axes):
        base = parent.dims[d]
        terms = tuple(t for t in base.terms + (starts[k],) if not is_zero(t))
        dims[d] = DimSel(terms or (0,), sizes[k])
    return _ordered(parent.root, tuple(dims), tuple(d for d in parent.axes if not dims[d].is_index))


def _ordered(root, dims, axes):
    """A RefView whose dimensions are the root dimensions `axes`, in that order."""
    return RefView(root, dims, None if list(axes) == sorted(axes) else axes)


# ----------------------------------------------------------------------------- shared-memory buffers

class BufferRole:
    """What an SMEM buffer holds, for its CuTe layout.

    PLAIN: row-major, or tiled and swizzled with K-major atoms when it declares a swizzle.
    MMA_A, MMA_B: tensor-core operand tiles, laid out from CuTe's WGMMA layout atoms of
    their major-ness (BufferUse.major), with CuTe modes (M, K) for A and (N, K) for B.
    """
    PLAIN = "plain"
    MMA_A = "mma_a"
    MMA_B = "mma_b"


@dataclass(frozen=True)
class BufferUse:
    """An SMEM buffer's role and, for MMA operands, which dimension is contiguous (analysis.K_MAJOR / MN_MAJOR).

    A K-major buffer stores K last: A as (M, K), B as (N, K) read through a transpose.
    An MN-major one stores M or N last: B as (K, N), A as (K, M) read through a transpose.
    """
    role: str
    major: str = None


def buffer_uses(graph):
    """Maps id(alloc result) of every SMEM buffer to its BufferUse; raises on conflicting uses."""
    uses = {}
    for op in graph.walk():
        if instruction_of(op) is not None:
            for operand, which, role in ((op.arg("a"), "A", BufferRole.MMA_A), (op.arg("b"), "B", BufferRole.MMA_B)):
                if getattr(operand, "space", None) != MemorySpace.SMEM:
                    continue
                root = root_ref(operand)
                use = BufferUse(role, operand_major(which, operand))
                seen = uses.setdefault(id(root), use)
                if seen.role != role:
                    raise unsupported(op, "one SMEM buffer used both as an MMA A operand and a B operand",
                                      "use separate buffers for A and B")
                if seen.major != use.major:
                    raise unsupported(op, f"one SMEM buffer read as an MMA {which} operand both {seen.major}-major "
                                          f"and {use.major}-major (transposed and not)",
                                      "read each buffer one way: always through the same tg.transpose_ref or never")
    for op in graph.walk():
        if op.kind == "alloc" and op.result.space == MemorySpace.SMEM:
            uses.setdefault(id(op.result), BufferUse(BufferRole.PLAIN))
    return uses


# ----------------------------------------------------------------------------- barriers

@dataclass(frozen=True)
class BarrierPlan:
    """How arrivals on one barrier alloc are counted in hardware.

    `per_warp`: every arrival comes from a warpgroup-level `barrier_arrive`, which the
    lowering performs as one arrival per warp (so each warp's prior work is ordered
    before the arrival), multiplying the hardware count by 4.
    """
    per_warp: bool

    def hardware_count(self, num_arrivals):
        return num_arrivals * (4 if self.per_warp else 1)


def barrier_plans(graph):
    """Maps id(barrier alloc result) to its BarrierPlan."""
    kinds = {}
    inside_core_map = set()
    for op in graph.walk():
        if op.kind == "core_map":
            inside_core_map.update(id(inner) for inner in op.walk() if inner is not op)
    for op in graph.walk():
        bar = op.opdef.arrival(op)
        if bar is None:
            continue
        kind = "warpgroup" if op.kind == "barrier_arrive" and id(op) not in inside_core_map else "single"
        kinds.setdefault(id(root_ref(bar)), set()).add(kind)
    plans = {}
    for op in graph.walk():
        if op.kind == "alloc" and op.result.space == MemorySpace.BARRIER:
            plans[id(op.result)] = BarrierPlan(per_warp=kinds.get(id(op.result)) == {"warpgroup"})
    return plans


# ----------------------------------------------------------------------------- scalars

_NONNEGATIVE_OPS = ("add", "mul", "div", "rem", "min", "max")


def loop_index_starts(graph):
    """Maps id(index argument) of every fori_loop to the loop's lower bound."""
    return {id(op.regions[0].args[0]): op.arg("lower") for op in graph.walk() if op.kind == "fori_loop"}


def nonnegative(x, loop_starts):
    """True when the scalar `x` is provably >= 0 (so floor and truncating division agree on it).

    Literals, axis indices, indices of loops with a non-negative lower bound
    (`loop_starts`, see loop_index_starts), and add/mul/div/rem/min/max of such values.
    """
    if isinstance(x, bool):
        return True
    if isinstance(x, int):
        return x >= 0
    if x.producer is None:
        return id(x) in loop_starts and nonnegative(loop_starts[id(x)], loop_starts)
    op = x.producer
    if op.kind == "axis_index":
        return True
    if op.kind == "select":
        return all(nonnegative(op.arg(o), loop_starts) for o in ("on_true", "on_false"))
    return (op.kind == "binop" and op.attrs["op"] in _NONNEGATIVE_OPS
            and all(nonnegative(o, loop_starts) for o in op.operands))


# ----------------------------------------------------------------------------- value uses

def use_counts(graph):
    """Maps id(value) to how many operands (in any region) refer to it."""
    counts = {}
    for op in graph.walk():
        for o in op.operands:
            if hasattr(o, "graph"):
                counts[id(o)] = counts.get(id(o), 0) + 1
    return counts
