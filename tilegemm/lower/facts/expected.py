"""What a kernel's graph says its compiled code must do: the expectations `checks.py` holds the PTX to.

Everything here reads the graph only (and the SharedStorage layout tilegemm's
lowering promises, lang/storage.py: the mbarriers first, in allocation order,
then the TMEM address word and the pair's dealloc barrier, then every SMEM
buffer at a 1024-byte boundary, in allocation order).

MMA operand tiles are the canonical layouts CuTe builds from the tensor
core's swizzle atoms (PTX ISA, "Shared Memory Matrix Layout" of wgmma and
tcgen05): an atom is 8 rows of `swizzle` bytes along the stored tile's
contiguous dimension; atoms stack down all the rows, then along the
contiguous dimension. Either operand may be K-major (stored (MN, K), K
contiguous: A [M, K], B [N, K] read through tg.transpose_ref) or MN-major
(stored (K, MN): B [K, N], A [K, M] read through a transpose), as
`analysis.operand_major` reads off the graph. Either way the stride between
8-row groups (SBO) is 8 * swizzle bytes, and an instruction starts at the
byte of its first element: K step j of a K-major tile at (16j // atom_k) *
rows * swizzle + (16j % atom_k) * itemsize, of an MN-major one at 16j *
swizzle. An MN-major instruction wider than one atom reads atom columns LBO
= K * swizzle bytes apart (a wgmma's 64 rows of an MN-major f16 A fit one
128-byte atom: its LBO is unused, and its next 64-row block starts LBO on).
"""
import itertools
import math
from dataclasses import dataclass

from ...lang import dtypes
from ...lang.analysis import K_MAJOR, operand_major, root_ref, tmem_columns
from ...lang.arch import MBARRIER_BYTES, NO_SWIZZLE, SWIZZLE_ATOM_ROWS, WARPS_PER_WARPGROUP
from ...lang.rules.executors import ExecutorSpace, Unknown, with_enclosing
from ...lang.scratch import swizzle_of
from ...lang.storage import graph_storage
from ...lang.tensorcore import WGMMA, instruction_of
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


@dataclass(frozen=True)
class Storage:
    """The kernel's SharedStorage: its barrier arrays and buffers with their byte offsets, and the byte of the
    mbarrier the lowering adds for a 2-CTA pair's TMEM dealloc (None without one)."""
    barriers: list
    buffers: list
    pair_barrier: int


def storage(graph):
    """The Storage of the kernel's SharedStorage struct (lang/storage.py)."""
    layout = graph_storage(graph)
    barriers = [BarrierArray(p.alloc.attrs.get("name") or "barriers", p.offset, p.nbytes // MBARRIER_BYTES,
                             init_count(graph, p.alloc), p.alloc.loc) for p in layout.barriers]
    buffers = [Buffer(p.alloc.attrs.get("name") or "smem", p.offset, p.alloc.result.type, p.alloc.loc)
               for p in layout.buffers]
    return Storage(barriers, buffers, layout.pair_barrier.offset if layout.pair_barrier else None)


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


def waiting_warps(graph):
    """{id(barrier alloc result): the warps of a block that wait on it} for every tg.Barrier a barrier_wait op waits
    on; None for warps the graph's conditions leave to run time."""
    space = ExecutorSpace(graph)
    out = {}
    for op, enclosing in with_enclosing(graph.body.ops):
        if op.kind != "barrier_wait":
            continue
        barrier = root_ref(op.arg("barrier"))
        key, known = id(barrier), out.get(id(barrier), set())
        try:
            warps = {w for run in space.executors(enclosing) for w in executor_warps(space, run, enclosing)}
        except Unknown:
            warps = None
        out[key] = None if warps is None or known is None else known | warps
    return out


def executor_warps(space, run, enclosing):
    """The warps of a block an executor (`ExecutorSpace.executors`) stands for: its warpgroup's, or its one warp."""
    warp_axis = next((op.attrs["axis"] for op in enclosing if op.kind == "core_map"), None)
    first = WARPS_PER_WARPGROUP * run[space.thread_axis]
    return {first + run[warp_axis]} if warp_axis else set(range(first, first + WARPS_PER_WARPGROUP))


def expected_tx(graph):
    """{id(barrier alloc result): {bytes one copy expects}}: a copy expects its destination's bytes, a 2-CTA
    partitioned copy the bytes of both blocks' halves (on the leader's barrier)."""
    tx = {}
    for op in ops(graph, "copy_gmem_to_smem"):
        dst, bar = op.arg("dst"), op.arg("barrier")
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
               and op.arg("barrier") is not None]
    return {"tma": loads, "commit": commits}


# ----------------------------------------------------------------------------- MMAs

@dataclass(frozen=True)
class Operand:
    """An MMA operand tile: its buffer, its major-ness and the descriptor fields and instruction starts its
    canonical layout gives."""
    buffer: Buffer
    k_major: bool
    swizzle: int
    sbo: int
    lbo: int             # None: not used (K-major, or an instruction reads within one atom column)
    starts: tuple        # byte offset of each instruction's first element from the first one's, in issue order


def canonical_offset(ref_type, row, col):
    """Byte offset of element (row, col) of one stage of a stored MMA operand tile (col contiguous), before the
    swizzle: columns of `swizzle` bytes, each running down every row, one after another."""
    swizzle, itemsize = swizzle_of(ref_type.transforms), dtypes.itemsize(ref_type.dtype)
    per_row = swizzle // itemsize
    return (col // per_row) * ref_type.shape[-2] * swizzle + row * swizzle + (col % per_row) * itemsize


def operand(buffer, k_major, extent, corners):
    """The Operand of a tile stored in `buffer` whose instructions each read `extent` rows (A) or columns (B) from
    the logical (mn, k) `corners`."""
    t = buffer.ref_type
    swizzle, itemsize = swizzle_of(t.transforms), dtypes.itemsize(t.dtype)
    offsets = [canonical_offset(t, *((mn, k) if k_major else (k, mn))) for mn, k in corners]
    starts = tuple(o - offsets[0] for o in offsets)
    column_bytes = t.shape[-2] * swizzle   # one swizzle-wide column of the tile, down every row
    if swizzle == NO_SWIZZLE and not k_major:
        # An unswizzled MN-major descriptor swaps the fields (PTX ISA, matrix descriptor): SBO steps along MN
        # from one 16-byte column to the next, LBO along K from one 8-row core matrix to the next.
        return Operand(buffer, k_major, swizzle, column_bytes, SWIZZLE_ATOM_ROWS * swizzle, starts)
    lbo = None if k_major or extent * itemsize <= swizzle else column_bytes
    return Operand(buffer, k_major, swizzle, SWIZZLE_ATOM_ROWS * swizzle, lbo, starts)


@dataclass(frozen=True)
class Mma:
    """What one wgmma / tcgen05_mma op must compile to."""
    op: object
    m: int               # of one instruction (a pair's M for 2-CTA tcgen05)
    n: int
    steps: int           # instructions: one per K step (per K step and 64-row block of a wgmma's accumulator)
    a_dtype: object
    b_dtype: object
    acc_dtype: object
    a: Operand
    b: Operand
    cta_group: int       # tcgen05 only
    tmem: tuple          # tcgen05: (first, last) accumulator column


def mma_operands(op, buffers, m_blocks, m):
    """(A, B) Operands of an MMA op whose instructions each read `m` rows of A and all of B over one K step, the
    `m_blocks` blocks of rows of a K step one after another."""
    acc, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
    k = instruction_of(op).k(a.dtype)
    issue = [(i * m, j * k) for j in range(a.shape[-1] // k) for i in range(m_blocks)]
    reads = (("A", a, m, issue), ("B", b, acc.shape[1], [(0, k) for _, k in issue]))
    return tuple(operand(buffers[id(root_ref(x))], operand_major(which, x) == K_MAJOR, extent, corners)
                 for which, x, extent, corners in reads)


def expected_mmas(graph):
    buffers = storage(graph).buffers
    by_id = {id(op.result): b for op, b in zip(allocs(graph, MemorySpace.SMEM), buffers)}
    tmem_first = {}
    column = 0
    for op in allocs(graph, MemorySpace.TMEM):
        tmem_first[id(op.result)] = column
        column += tmem_columns(op.result.type)
    out = []
    for op in ops(graph, "wgmma", "tcgen05_mma"):
        acc, a, b = op.arg("acc"), op.arg("a"), op.arg("b")
        if op.kind == "wgmma":     # a warpgroup's instructions cover its accumulator 64 rows at a time
            rows, m_blocks, pair, span = WGMMA.m, acc.shape[0] // WGMMA.m, None, None
        else:
            rows, m_blocks = acc.shape[0], 1
            pair = 2 if op.attrs["collective_axis"] is not None else 1
            first = tmem_first[id(root_ref(acc))]
            span = (first, first + tmem_columns(root_ref(acc).type) - 1)
        a_op, b_op = mma_operands(op, by_id, m_blocks, rows)
        out.append(Mma(op, (pair or 1) * rows, acc.shape[1], m_blocks * (a.shape[-1] // instruction_of(op).k(a.dtype)),
                       a.dtype, b.dtype,
                       acc.dtype, a_op, b_op, pair, span))
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
