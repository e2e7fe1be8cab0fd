"""How a GEMM's inputs are stored: A as [M, K] ("mk") or [K, M] ("km"), B as [K, N] ("kn") or [N, K] ("nk").

Every input is a row-major array; "nk" is a PyTorch linear layer's weight, used as
x @ w.T. The layout decides which dimension of an operand tile is contiguous: K
in "mk" and "nk" (a K-major operand), M or N in "km" and "kn" (MN-major). 16-bit
tensor cores read both from shared memory, so a kernel copies tiles as stored
and reads the transposed ones through `tg.transpose_ref`; nothing is copied.

What the layout changes in the budget (see `tma_boxes` and the "operand
layouts" row of the table): the number of TMA boxes that fill a stage, because a
swizzled box spans at most one 128-byte swizzle row of the contiguous dimension.
What it does not change, and so is not charged: the bytes moved and shared-memory
bank behaviour (both layouts are 128-byte swizzled, which the tensor cores read
without conflicts).

What the stored row length (the pitch) changes: L2 serves a box row in whole
128-byte lines, so where the pitch is not a multiple of a line the rows start
mid-line and most of them take two (`line_factor`). On the H200 that alone made
the same kernel 1.1-1.6x slower, and clusters sharing the mis-aligned operand by
multicast won the time back (benchmarks/RESULTS.md run 64).
"""
import math

from ..lang.analysis import K_MAJOR, operand_major
from ..lang.rules.swizzle import SWIZZLES
from ..lang.trace import ShapeDtype
from ..lang.types import RefType

A_LAYOUTS = ("mk", "km")
B_LAYOUTS = ("kn", "nk")
MMA_ORDER = {"A": "mk", "B": "kn"}   # the order the MMA multiplies: A (M, K) @ B (K, N)
BOX_ROW_BYTES = max(SWIZZLES)        # the contiguous extent of one swizzled TMA box
L2_LINE_BYTES = 128                  # what L2 serves a box row in: a row starting mid-line costs two


def check_layouts(a_layout, b_layout):
    """Raises ValueError unless the layouts are among A_LAYOUTS and B_LAYOUTS."""
    if a_layout not in A_LAYOUTS or b_layout not in B_LAYOUTS:
        raise ValueError(f"a_layout must be one of {A_LAYOUTS} and b_layout one of {B_LAYOUTS} (the order of the "
                         f"dimensions the arrays store); got {a_layout!r} and {b_layout!r}")


def k_major(layout):
    """True when `layout` stores K last (contiguous)."""
    return layout.endswith("k")


def mn_dim(layout):
    """The dimension (0 or 1) of the stored array that is M (A) or N (B)."""
    return 0 if k_major(layout) else 1


def stored(layout, mn, k):
    """An operand's (mn, k) extents, or slices, in the order `layout` stores them."""
    return (mn, k) if k_major(layout) else (k, mn)


def unstored(layout, pair):
    """(mn, k) of a pair given in the order `layout` stores it (the inverse of `stored`)."""
    return tuple(pair) if k_major(layout) else tuple(pair)[::-1]


def operand_specs(m, n, k, dtype, a_layout="mk", b_layout="kn", b_dtype=None):
    """The tg.ShapeDtype of the arrays a and b (of `b_dtype` where given, else `dtype` too) a GEMM kernel taking these
    layouts is called with."""
    check_layouts(a_layout, b_layout)
    return ShapeDtype(stored(a_layout, m, k), dtype), ShapeDtype(stored(b_layout, n, k), b_dtype or dtype)


def layout_of(which, major):
    """The layout that makes MMA operand `which` ('A' or 'B') K_MAJOR or MN_MAJOR."""
    return ("mk" if major == K_MAJOR else "km") if which == "A" else ("nk" if major == K_MAJOR else "kn")


def graph_layouts(graph, mma):
    """(a_layout, b_layout) of a GEMM graph, read off the major-ness of the operands of its MMA op `mma`.

    An operand held in registers has no stored layout: it counts as the MMA's own order.
    """
    a, b = mma.operands[:2] if mma.kind == "dot" else mma.operands[1:3]   # dot(a, b[, acc]); mma(acc, a, b)
    return tuple(layout_of(which, operand_major(which, x)) if isinstance(x.type, RefType) else MMA_ORDER[which]
                 for which, x in (("A", a), ("B", b)))


def tma_boxes(layout, mn, k, itemsize):
    """TMA boxes filling one (mn x k) stage tile: its contiguous extent in spans of at most 128 bytes."""
    contiguous = (k if k_major(layout) else mn) * itemsize
    return max(1, -(-contiguous // BOX_ROW_BYTES))


def line_factor(layout, mn, k, tile_mn, tile_k, itemsize):
    """The L2 lines an operand's TMA box rows read, over those they would read starting on a line: 1 where the
    stored rows (`layout`, an mn x k operand) and the tiles' starts along them are whole lines apart; up to 2
    for 128-byte box rows whose starts walk through the line (the array's base is line-aligned)."""
    pitch = (k if k_major(layout) else mn) * itemsize
    contiguous_tile = (tile_k if k_major(layout) else tile_mn) * itemsize
    row = min(contiguous_tile, BOX_ROW_BYTES)
    starts = range(0, L2_LINE_BYTES, math.gcd(pitch, contiguous_tile, L2_LINE_BYTES))
    lines = sum(-(-(start + row) // L2_LINE_BYTES) for start in starts) / len(starts)
    return lines / -(-row // L2_LINE_BYTES)


def describe(which, layout):
    """'A [M, K] K-major', 'B [N, K] K-major', ... for the budget table."""
    dims = [d.upper() for d in layout]
    major = "K" if k_major(layout) else dims[1]
    return f"{which} [{dims[0]}, {dims[1]}] {major}-major"
