"""Barriers the tensor core arrives on must be declared to order tensor-core work."""
from ...errors import KernelError
from ..analysis import alloc_of
from ..verify import rule


@rule("tcgen05_mma", "tcgen05_commit_arrive")
def tensor_core_barriers(op, ctx):
    """tcgen05_mma and tcgen05_commit_arrive need barriers declared with orders_tensor_core=True."""
    barrier = op.arg("barrier")
    if barrier is None or barrier.type.barrier.orders_tensor_core:
        return
    alloc = alloc_of(barrier)
    raise KernelError(
        f"{op.kind} makes the tensor core arrive on a barrier declared without orders_tensor_core=True, so "
        "threads waiting on it would not see the MMA's TMEM results in order; declare it with "
        "tg.Barrier(..., orders_tensor_core=True)", loc=op.loc,
        related=[("the barrier is declared at", alloc.loc)] if alloc is not None else ())
