"""Hypothesis strategies for kernel tests: problem shapes a kernel accepts, input dtypes and operand layouts.

Shapes are drawn both anywhere and at tile edges (a whole number of tiles, one
alignment unit less or more), from one unit up to a few tiles; hypothesis shrinks
a failing shape towards the smallest one that still fails.
"""
from hypothesis import strategies as st

from ..lang import dtypes as _dtypes
from ..lang.arch import TMA_ALIGN as ALIGN
from ..lang.tensorcore import ANY_LAYOUT_DTYPES
from ..model.layouts import A_LAYOUTS, B_LAYOUTS


def shapes(*, tile=(64, 64, 64), dtype=_dtypes.float16, multiple=None, max_tiles=3):
    """(M, N, K) for a kernel with (tile_m, tile_n, tile_k) tiles: each extent a multiple of its unit, from one
    unit to `max_tiles` tiles and a unit (an int, or one per dimension). Units (`multiple`): by default 1 for M
    and, as TMA needs rows of whole 16 bytes, 16 bytes of `dtype` for N and K."""
    multiple = multiple or (1, ALIGN // _dtypes.itemsize(dtype), ALIGN // _dtypes.itemsize(dtype))
    max_tiles = max_tiles if isinstance(max_tiles, (tuple, list)) else (max_tiles,) * 3
    for name, t, unit in zip("MNK", tile, multiple):
        if t % unit:
            raise ValueError(f"shapes(): the {name} tile {t} is not a multiple of its unit {unit}")
    return st.tuples(*(_extent(t, unit, most) for t, unit, most in zip(tile, multiple, max_tiles)))


def _extent(tile, unit, max_tiles):
    """One extent: any multiple of `unit` up to `max_tiles` tiles (and a unit), or one at a tile edge."""
    largest = max_tiles * tile + unit
    anywhere = st.integers(1, largest // unit).map(lambda units: units * unit)
    at_edge = st.builds(lambda tiles, side: tiles * tile + side * unit, st.integers(1, max_tiles),
                        st.sampled_from((0, -1, 1))).filter(lambda extent: extent > 0)
    return st.one_of(anywhere, at_edge)


def dtypes(choices=ANY_LAYOUT_DTYPES):
    """An input dtype of `choices` (default: the tensor cores' f16 and bf16)."""
    return st.sampled_from([_dtypes.as_dtype(d) for d in choices])


def layouts():
    """(a_layout, b_layout): how A and B are stored (tilegemm.model.layouts), every combination; pair it with
    tilegemm.testing.stored_operands for the inputs and the reference."""
    return st.sampled_from([(a, b) for a in A_LAYOUTS for b in B_LAYOUTS])
