"""The shared storage of one block: where every mbarrier, TMEM word and SMEM buffer lives, in one place.

The layout: every barrier array's mbarriers first (8 bytes each, in allocation
order); then, for a kernel with tensor memory, the word tcgen05.alloc writes
the TMEM address into and, for a 2-CTA pair, the mbarrier the pair frees its
TMEM with; then every SMEM buffer at a 1024-byte boundary, in allocation
order; the total rounded up to 1024 bytes. The verifier budgets it, the
lowering declares its SharedStorage struct in this order and launches with
its size, the PTX checks (lower/facts) read barrier offsets off it, and the
performance model counts it.
"""
from dataclasses import dataclass

from .arch import MBARRIER_BYTES, SMEM_ALIGN, TMEM_ADDRESS_BYTES, shared_storage_bytes
from .types import MemorySpace


@dataclass(frozen=True)
class Placement:
    """One allocation in shared storage: what allocates it (an alloc op or a scratch spec; None for a word the
    lowering adds), its offset and its bytes."""
    alloc: object
    offset: int
    nbytes: int

    def holds(self, offset):
        return offset is not None and self.offset <= offset < self.offset + self.nbytes


@dataclass(frozen=True)
class Storage:
    """A block's shared storage (see the module docstring); `total` is the dynamic shared memory it launches with."""
    barriers: tuple       # Placement of each barrier array
    tmem_address: Placement
    pair_barrier: Placement   # the 2-CTA pair's TMEM dealloc mbarrier
    buffers: tuple        # Placement of each SMEM buffer
    total: int

    @property
    def header_bytes(self):
        """Bytes before the first buffer's alignment: the mbarriers and TMEM words."""
        return sum(p.nbytes for p in self.barriers + tuple(p for p in (self.tmem_address, self.pair_barrier) if p))


def layout(allocs):
    """The Storage of a block holding `allocs`: (what allocates it, its RefType) pairs in allocation order."""
    offset, barriers, buffers = 0, [], []
    for key, t in allocs:
        if t.space == MemorySpace.BARRIER:
            barriers.append(Placement(key, offset, MBARRIER_BYTES * t.barrier.num_barriers))
            offset += barriers[-1].nbytes
    tmem = [t for _, t in allocs if t.space == MemorySpace.TMEM]
    tmem_address = pair_barrier = None
    if tmem:
        tmem_address = Placement(None, offset, TMEM_ADDRESS_BYTES)
        offset += TMEM_ADDRESS_BYTES
        if any(t.collective for t in tmem):
            pair_barrier = Placement(None, offset, MBARRIER_BYTES)
            offset += MBARRIER_BYTES
    header = offset
    for key, t in allocs:
        if t.space == MemorySpace.SMEM:
            offset = -(-offset // SMEM_ALIGN) * SMEM_ALIGN
            buffers.append(Placement(key, offset, t.nbytes))
            offset += t.nbytes
    total = shared_storage_bytes([b.nbytes for b in buffers], header)
    return Storage(tuple(barriers), tmem_address, pair_barrier, tuple(buffers), total)


def graph_storage(graph):
    """The Storage of a kernel: its alloc ops, nested scopes included, in program order."""
    return layout([(op, op.result.type) for op in graph.walk() if op.kind == "alloc"])
