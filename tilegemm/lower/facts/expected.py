"""What a kernel's graph says its compiled code must do: the expectations `checks.py` holds the PTX to.

Everything here reads the graph only (and the SharedStorage layout tilegemm's
lowering promises: the mbarriers first, in allocation order, then the TMEM
address word and the pair's dealloc barrier, then every SMEM buffer at a
1024-byte boundary, in allocation order).

MMA operand tiles are the canonical layouts CuTe builds from the tensor
core's swizzle atoms (PTX ISA, "Shared Memory Matrix Layout" of wgmma and
tcgen05): an atom is 8 rows of `swizzle` bytes along the contiguous
dimension. A K-major tile (A: logical (rows, K)) stacks atoms down its rows,
then along K: the stride between 8-row groups (SBO) is 8 * swizzle bytes and
K step j starts at byte (16j // atom_k) * rows * swizzle + (16j % atom_k) *
itemsize. An MN-major tile (B: logical (K, N)) stacks atoms down K, then
along N: SBO is 8 * swizzle, the stride between atom columns along N (LBO)
is K * swizzle, and K step j starts at byte 16j * swizzle.
"""
import itertools
import math
from dataclasses import dataclass

from ...lang import dtypes
from ...lang.analysis import root_ref, tmem_columns
from ...lang.arch import MBARRIER_BYTES, MMA_K, SMEM_ALIGN, WGMMA_M
from ...lang.scratch import swizzle_of
from ...lang.types import MemorySpace
from ..plan import barrier_plans


@dataclass(frozen=True)
class BarrierArray:
    """One tg.Barrier / tg.ClusterBarrier alloc in SharedStorage and the count each of its mbarriers starts with."""
    name: str
    offset: int
    num_barriers: int
    init_count: int
    loc: object

    def holds(self, offset):
        return offset is not None and self.offset <= offset < self.offset + MBARRIER_BYTES * self.num_barriers


@dataclass(frozen=True)
class Buffer:
    """One SMEM alloc in SharedStorage."""
    name: str
    offset: int
    ref_type: object
    loc: object

    @property
    def nbytes(self):
        return self.ref_type.nbytes

    def holds(self, offset):
        return offset is not None and self.offset <= offset < self.offset + self.nbytes


def ops(graph, *kinds):
    return [op for op in graph.walk() if op.kind in kinds]


def allocs(graph, space):
    return [op for op in ops(graph, "alloc") if op.result.space == space]


def extra_words(graph):
    """8-byte SharedStorage words between the mbarriers and the buffers: the TMEM address, the pair's barrier."""
    tmem = allocs(graph, MemorySpace.TMEM)
    return (1 if tmem else 0) + (1 if any(op.result.type.collective for op in tmem) else 0)


def storage(graph):
    """(barrier arrays, buffers) of the kernel's SharedStorage, with their byte offsets."""
    barriers, offset = [], 0
    for op in allocs(graph, MemorySpace.BARRIER):
        spec = op.result.type.barrier
        barriers.append(BarrierArray(op.attrs.get("name") or "barriers", offset, spec.num_barriers,
                                     init_count(graph, op), op.loc))
        offset += MBARRIER_BYTES * spec.num_barriers
    offset += MBARRIER_BYTES * extra_words(graph)
    buffers = []
    for op in allocs(graph, MemorySpace.SMEM):
        offset = -(-offset // SMEM_ALIGN) * SMEM_ALIGN
        buffers.append(Buffer(op.attrs.get("name") or "smem", offset, op.result.type, op.loc))
        offset += op.result.type.nbytes
    return barriers, buffers


# ----------------------------------------------------------------------------- barriers

def collective_size(graph, axes):
    cfg = graph.config
    return math.prod(cfg["cluster"][cfg["cluster_names"].index(a)] for a in axes)


def init_count(graph, alloc):
    """Arrivals that complete a phase: num_arrivals from each block along the collective axes, and one per warp
    when every arrival is a warpgroup's barrier_arrive (the lowering's per-warp plan)."""
    spec = alloc.result.type.barrier
    per_warp = barrier_plans(graph)[id(alloc.result)].per_warp
    return spec.num_arrivals * collective_size(graph, spec.collective_axes) * (4 if per_warp else 1)


def expected_tx(graph):
    """{id(barrier alloc result): {bytes one copy expects}}: a copy expects its destination's bytes, a 2-CTA
    partitioned copy the bytes of both blocks' halves (on the leader's barrier)."""
    tx = {}
    for op in ops(graph, "copy_gmem_to_smem"):
        dst, bar = op.operands[1], op.operands[2]
        pair = 2 if op.attrs["partitioned_axis"] is not None else 1
        tx.setdefault(id(root_ref(bar)), set()).add(pair * dst.type.nbytes)
    return tx


# ----------------------------------------------------------------------------- clusters

def cluster_positions(graph):
    """Every block of a cluster: (x, y, z) coordinates and its rank (x fastest)."""
    dims = list(graph.config["cluster"]) + [1] * (3 - len(graph.config["cluster"]))
    for z, y, x in itertools.product(range(dims[2]), range(dims[1]), range(dims[0])):
        yield (x, y, z), x + dims[0] * (y + dims[1] * z)


def multicast_mask(graph, axes, coords):
    """The cluster ranks (as a bit mask) of the blocks along `axes` that share the other coordinates of `coords`."""
    cfg = graph.config
    sizes = list(cfg["cluster"]) + [1] * (3 - len(cfg["cluster"]))
    dims = [cfg["cluster_names"].index(a) for a in axes]
    mask = 0
    for combo in itertools.product(*(range(sizes[d]) for d in dims)):
        c = list(coords)
        for d, v in zip(dims, combo):
            c[d] = v
        mask |= 1 << (c[0] + sizes[0] * (c[1] + sizes[1] * c[2]))
    return mask


def multicast_axes(graph):
    """{"tma": [axes of each multicast TMA load], "commit": [axes of each multicast tcgen05 commit]}."""
    loads = [tuple(op.attrs["collective_axes"]) for op in ops(graph, "copy_gmem_to_smem")
             if op.attrs["collective_axes"] and op.attrs["partitioned_axis"] is None
             and collective_size(graph, op.attrs["collective_axes"]) > 1]
    commits = [(op.attrs["collective_axis"],) for op in ops(graph, "tcgen05_mma", "tcgen05_commit_arrive")
               if op.attrs["collective_axis"] is not None
               and (op.kind == "tcgen05_commit_arrive" or op.attrs["has_barrier"])]
    return {"tma": loads, "commit": commits}


# ----------------------------------------------------------------------------- MMAs

@dataclass(frozen=True)
class Operand:
    """An MMA operand tile: its buffer and the descriptor fields and K-step offsets its canonical layout gives."""
    buffer: Buffer
    k_major: bool
    swizzle: int
    sbo: int
    lbo: int             # None: not used by the layout (K-major)
    k_offsets: tuple     # byte offset of each K step's first element from the tile's start


def operand(buffer, k_major, k_steps):
    t = buffer.ref_type
    swizzle, itemsize = swizzle_of(t.transforms), dtypes.itemsize(t.dtype)
    rows = t.shape[-2]
    if k_major:
        atom_k = swizzle // itemsize
        offsets = tuple((MMA_K * j // atom_k) * rows * swizzle + (MMA_K * j % atom_k) * itemsize
                        for j in range(k_steps))
        return Operand(buffer, True, swizzle, 8 * swizzle, None, offsets)
    offsets = tuple(MMA_K * j * swizzle for j in range(k_steps))
    lbo = rows * swizzle if t.shape[-1] * itemsize > swizzle else None
    return Operand(buffer, False, swizzle, 8 * swizzle, lbo, offsets)


@dataclass(frozen=True)
class Mma:
    """What one wgmma / tcgen05_mma op must compile to."""
    op: object
    m: int               # of one instruction (a pair's M for 2-CTA tcgen05)
    n: int
    k_steps: int
    a_dtype: object
    b_dtype: object
    acc_dtype: object
    a: Operand
    b: Operand
    cta_group: int       # tcgen05 only
    tmem: tuple          # tcgen05: (first, last) accumulator column


def expected_mmas(graph):
    _, buffers = storage(graph)
    by_id = {id(op.result): b for op, b in zip(allocs(graph, MemorySpace.SMEM), buffers)}
    tmem_first = {}
    column = 0
    for op in allocs(graph, MemorySpace.TMEM):
        tmem_first[id(op.result)] = column
        column += tmem_columns(op.result.type)
    out = []
    for op in ops(graph, "wgmma", "tcgen05_mma"):
        acc, a, b = op.operands[:3]
        k_steps = a.shape[-1] // MMA_K
        a_op = operand(by_id[id(root_ref(a))], True, k_steps)
        b_op = operand(by_id[id(root_ref(b))], False, k_steps)
        if op.kind == "wgmma":
            out.append(Mma(op, WGMMA_M, acc.shape[1], k_steps, a.dtype, b.dtype, acc.dtype, a_op, b_op, None, None))
            continue
        pair = 2 if op.attrs["collective_axis"] is not None else 1
        first = tmem_first[id(root_ref(acc))]
        span = (first, first + tmem_columns(root_ref(acc).type) - 1)
        out.append(Mma(op, pair * acc.shape[0], acc.shape[1], k_steps, a.dtype, b.dtype, acc.dtype, a_op, b_op,
                       pair, span))
    return out


# ----------------------------------------------------------------------------- waits and TMEM

def expected_waits(graph):
    """{("wgmma", n, False)} of the wgmma_wait ops and {("bulk", n, read_only)} of the wait_smem_to_gmem ops."""
    waits = {("wgmma", op.attrs["n"], False) for op in ops(graph, "wgmma_wait")}
    waits |= {("bulk", op.attrs["n"], bool(op.attrs["read_only"])) for op in ops(graph, "wait_smem_to_gmem")}
    return waits


def tmem_used_columns(graph):
    return sum(tmem_columns(op.result.type) for op in allocs(graph, MemorySpace.TMEM))


def is_pair(graph):
    return any(op.attrs["collective_axis"] is not None for op in ops(graph, "tcgen05_mma"))
