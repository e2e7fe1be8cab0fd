"""TMA copies (plain, multicast, 2-CTA partitioned), commit_smem and wait_smem_to_gmem.

A load is one arrival plus its byte count on its barrier, made when it is
issued; the data lands later (asyncops.TmaLoad). Multicast: every block of the
collective group issues the same copy; block r's copy fetches the r-th chunk
of the tile (split along the first dimension the group size divides) into
every block's SMEM and completes those bytes on every block's barrier.
Partitioned: block r loads the r-th part of the source along the partitioned
dimension into its own SMEM; only the leader's (rank 0's) barrier tracks the
copy, with one arrival for the whole group's bytes.

Landing bytes carry what their issuer knew when it issued the copy: a thread
that waits for the phase is ordered after everything the issuing thread did
before the copy, even without an arrival of its own (the follower of a pair).
"""
from ...errors import KernelError
from ...lang.analysis import box_dims
from ..asyncops import TmaLoad, TmaStore
from ..races import fence, touch_operand
from ..registry import handler
from .refs import allocation, same_barrier


@handler("copy_gmem_to_smem", sync=True)
def copy_gmem_to_smem(task, op, env):
    """Issues a TMA load: plain, multicast or partitioned (see the module docstring)."""
    src, dst, barrier = task.operands(op, env)
    element = barrier.element()
    axes = op.attrs["collective_axes"]
    if not axes:
        transfers, arrival = [(src, dst, element, task.block)], (element, dst.nbytes)
    else:
        peers = task.block.cluster.peers(task.block, axes)
        split = _partitioned if op.attrs["partitioned_axis"] is not None else _multicast
        transfers, arrival = split(op, src, dst, element, peers, peers.index(task.block))
    accesses = [touch_operand(task, op, "dst", d) for _, d, _, _ in transfers]
    clock = task.release()
    for (s, d, b, block), access in zip(transfers, accesses):
        task.scheduler.issue(TmaLoad(op, s, d, b, block, access, clock))
    if arrival is not None:
        target, nbytes = arrival
        target.arrive(clock, op, tx=nbytes)


def _multicast(op, src, dst, element, peers, rank):
    """Block `rank`'s transfers of a multicast copy (its chunk into every block) and its own arrival."""
    size = len(peers)
    dim = next((d for d, n in enumerate(dst.shape) if n % size == 0), None)
    if dim is None:  # no even split: the first block fetches the whole tile for everyone
        chunk = (src, dst) if rank == 0 else None
    else:
        part = dst.shape[dim] // size
        src_dim = box_dims(src.shape, dst.shape)[dim]
        chunk = (src.narrow(src_dim, rank * part, (rank + 1) * part), dst.narrow(dim, rank * part, (rank + 1) * part))
    transfers = []
    if chunk is not None:
        chunk_src, chunk_dst = chunk
        transfers = [(chunk_src, chunk_dst.rebase(allocation(peer, dst.buffer.alloc_op)), same_barrier(peer, element),
                      peer) for peer in peers]
    return transfers, (element, dst.nbytes)


def _partitioned(op, src, dst, element, peers, rank):
    """Block `rank`'s part of a partitioned copy, tracked by the leader's barrier (which alone gets an arrival)."""
    dim, size = op.attrs["partitioned_axis"], len(peers)
    if src.shape[dim] != dst.shape[dim] * size:
        raise KernelError(f"partitioned copy along dimension {dim}: the source view {src.shape} must be "
                          f"{size} times the destination {dst.shape} along it (one part per block)", loc=op.loc)
    part = dst.shape[dim]
    leader_barrier = same_barrier(peers[0], element)
    transfers = [(src.narrow(dim, rank * part, (rank + 1) * part), dst, leader_barrier, peers[rank])]
    return transfers, (leader_barrier, dst.nbytes * size) if rank == 0 else None


@handler("copy_smem_to_gmem", sync=True)
def copy_smem_to_gmem(task, op, env):
    """Issues a TMA store: it reads SMEM until a wait_smem_to_gmem covers its bulk group."""
    src, dst = task.operands(op, env)
    access = touch_operand(task, op, "src", src)
    task.open_stores.append(TmaStore(op, src, dst, access))
    if op.attrs["commit_group"]:
        task.store_groups.append(task.open_stores)
        task.open_stores = []


@handler("commit_smem", sync=True)
def commit_smem(task, op, env):
    """Fences this thread's earlier ordinary SMEM stores for TMA and tensor-core readers."""
    fence(task.unfenced, task.stamp())
    task.unfenced = []


@handler("wait_smem_to_gmem", sync=True)
def wait_smem_to_gmem(task, op, env):
    """Completes this thread's oldest bulk store groups until at most n are pending."""
    while len(task.store_groups) > op.attrs["n"]:
        for store in task.store_groups.popleft():
            store.complete(task.stamp())
