"""Structural rules: where array math and warp-level operations may appear."""
from ...errors import KernelError
from ..types import ArrayType
from ..verify import rule


@rule()
def no_array_math_in_core_map(op, ctx):
    """Inside a WarpMesh core_map only scalar work and single-lane operations are legal (not the ops their
    declaration marks warpgroup-wide)."""
    if not ctx.inside("core_map"):
        return
    if op.opdef.warpgroup_wide or any(isinstance(r.type, ArrayType) for r in op.results):
        raise KernelError(
            f"{op.kind} is warpgroup-wide array work and cannot run inside a WarpMesh core_map; "
            "legal there: scalar arithmetic, TMA copies, barrier operations, tcgen05_mma. "
            "Move the array work outside the core_map body",
            loc=op.loc, related=[("the core_map starts at", ctx.enclosing_op("core_map").loc)])
