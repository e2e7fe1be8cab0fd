"""Scalars read at run time (`idx[i]` of an int32 ref, Pallas's scalar refs): where they may be read from.

The read happens where the op stands in the kernel's order, in the interpreter as on
the GPU. A GMEM array the kernel itself writes (an output) is written by TMA or by one
thread of a warpgroup, with nothing ordering those writes before other threads' reads,
so the GPU could read the old value where the interpreter reads the new one: scalars
come from the kernel's inputs, or from SMEM, whose accesses the interpreter's race
checks order.
"""
from ...errors import KernelError
from .. import dtypes
from ..analysis import root_ref
from ..types import MemorySpace
from ..verify import rule
from .tma import param_name


@rule("load_scalar")
def scalars_come_from_inputs_or_smem(op, ctx):
    """A scalar is read from a kernel input or from SMEM, and is an int32 (bool arrays cannot live in memory)."""
    ref = op.arg("ref")
    root = root_ref(ref)
    if ref.dtype == dtypes.bool_:
        raise KernelError(f"reading a bool element of {root.type}: CuTe keeps bool (i1) values in registers only, "
                          "so a bool array cannot be a kernel array or an SMEM buffer on the GPU; store the flags "
                          "as int32 (0 or 1) and test them: tg.when(flags[i] != 0)", loc=op.loc)
    if root.space == MemorySpace.GMEM and any(root is out for out in ctx.graph.outputs):
        raise KernelError(f"reading a scalar of {param_name(ctx.graph, root)}, an output this kernel writes: on the "
                          "GPU nothing orders its writes (TMA stores, other threads) before this read, which could "
                          "see the old value; read scalars from the kernel's inputs (or SMEM copies of them: "
                          "tg.copy_gmem_to_smem, tg.barrier_wait, then ref[i])", loc=op.loc)
