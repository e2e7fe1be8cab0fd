"""Blackwell tensor memory (TMEM) of one block: where each tg.TMEM lives in the block's single allocation.

A block allocates TMEM once, at kernel start (tcgen05.alloc by warp 0), for all
its tg.TMEM refs side by side, and frees it at the end. TMEM is 128 lanes
(rows) by 512 columns of 32-bit cells; an address holds the lane in its high
16 bits and the column in its low 16 bits, so a (rows, columns) f32 tile is
the layout (rows, columns):(1 << 16, 1) at its first column.
"""
from dataclasses import dataclass

from ..lang import dtypes
from ..lang.analysis import tmem_columns
from ..lang.arch import BLACKWELL, tmem_allocation_columns
from .plan import unsupported

LANES = BLACKWELL.tmem_lanes
LANE_STRIDE = 1 << 16


@dataclass(frozen=True)
class TmemBuffer:
    """One tg.TMEM alloc: its tensor variable in the kernel and its first column in the block's allocation."""
    name: str
    ref_type: object
    column: int
    loc: object

    @property
    def columns(self):
        return tmem_columns(self.ref_type)

    @property
    def collective(self):
        return self.ref_type.collective


def place(op, name, column):
    """A TmemBuffer for the TMEM alloc `op` starting at `column`; raises for what the lowering cannot read."""
    t = op.result.type
    if t.dtype != dtypes.float32:
        raise unsupported(op, f"TMEM of {dtypes.name(t.dtype)}",
                          "allocate TMEM as float32 (the tcgen05 accumulator type)")
    if t.shape[0] != LANES:
        raise unsupported(op, f"a TMEM ref of {t.shape[0]} lanes",
                          f"allocate all {LANES} lanes, e.g. tg.TMEM(({LANES}, {t.shape[1]}), tg.float32)")
    return TmemBuffer(name, t, column, op.loc)


def allocation_columns(buffers):
    """Columns the block allocates: the buffers side by side, rounded up as tcgen05.alloc takes them."""
    return tmem_allocation_columns(sum(b.columns for b in buffers))


def tile_layout(rows, columns):
    """Source of the CuTe layout of a (rows, columns) f32 TMEM tile."""
    return f"cute.make_layout(({rows}, {columns}), stride=({LANE_STRIDE}, 1))"
