"""Extents: scratch shapes and barrier counts the hardware can hold, kernel arrays int32 indices can reach.

A scratch extent of zero or less would reach the interpreter as a numpy error
and the lowering as broken generated code; an mbarrier counts at most
2^20 - 1 arrivals per phase; and every index into a kernel array is an int32
(tilegemm's scalars, TMA's box coordinates), so no dimension may exceed 2^31.
"""
from ...errors import KernelError
from ..arch import MAX_ARRAY_DIM, MBARRIER_MAX_COUNT
from ..types import MemorySpace
from ..verify import graph_rule, rule
from .tma import param_name


@rule("alloc")
def scratch_extents_positive(op, ctx):
    """Every dimension of a scratch allocation is at least 1; barriers count 1 to 2^20 - 1 arrivals a phase."""
    t = op.result.type
    if t.space == MemorySpace.BARRIER:
        spec = t.barrier
        if spec.num_barriers < 1:
            raise KernelError(f"a barrier array of num_barriers={spec.num_barriers}: declare at least one barrier",
                              loc=op.loc)
        if not 1 <= spec.num_arrivals <= MBARRIER_MAX_COUNT:
            raise KernelError(f"num_arrivals={spec.num_arrivals}: an mbarrier completes a phase after 1 to "
                              f"{MBARRIER_MAX_COUNT} (2^20 - 1) arrivals", loc=op.loc)
        return
    for d, extent in enumerate(t.shape):
        if extent < 1:
            raise KernelError(f"{t} has {extent} elements in dimension {d}: every dimension of a scratch "
                              "allocation must be at least 1", loc=op.loc)


@graph_rule
def kernel_arrays_indexable(graph, ctx):
    """Every dimension of a kernel input or output holds 1 to 2^31 elements (int32 indices reach them all)."""
    for param in graph.params:
        for d, extent in enumerate(param.shape):
            if not 1 <= extent <= MAX_ARRAY_DIM:
                raise KernelError(
                    f"{param_name(graph, param)} has {extent} elements in dimension {d}; a dimension of a kernel "
                    f"array holds 1 to {MAX_ARRAY_DIM} (2^31) elements, since tilegemm indexes arrays with int32 "
                    "scalars, as TMA's box coordinates are: split the problem into smaller calls", loc=graph.loc)
