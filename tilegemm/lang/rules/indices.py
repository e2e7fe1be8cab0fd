"""Dynamic indices into scratch refs that can leave the allocation (e.g. `bars.at[k % 4]` of 3 barriers).

Static indices are checked when the view is taken (lang/values.py); GMEM views
may leave the array on purpose (TMA zero-fills and clips), so only SMEM, TMEM,
ACC and barrier refs are checked, with `analysis.upper_bound`.
"""
from ...errors import KernelError
from ..analysis import alloc_of, upper_bound
from ..types import MemorySpace
from ..verify import rule


def modulus(x):
    """The literal c when `x` is `a % c`, else None."""
    op = getattr(x, "producer", None)
    if op is not None and op.kind == "binop" and op.attrs["op"] == "rem" and isinstance(op.arg("b"), int):
        return op.arg("b")
    return None


@rule("view")
def scratch_indices_in_bounds(op, ctx):
    """A traced index whose largest value is known must keep the view inside its scratch allocation."""
    ref = op.arg("ref")
    if ref.space == MemorySpace.GMEM:
        return
    for d, (dim, start, size) in enumerate(zip(ref.shape, op.arg("starts"), op.attrs["sizes"])):
        bound = None if isinstance(start, int) else upper_bound(start)
        if bound is None or bound + (size or 1) <= dim:
            continue
        c = modulus(start)
        how = f" (it is taken % {c})" if c is not None else ""
        alloc = alloc_of(ref)
        related = [("allocated at", alloc.loc)] if alloc is not None else []
        if ref.space == MemorySpace.BARRIER:
            raise KernelError(
                f"this barrier index can be {bound}{how}, but the barrier array has num_barriers={dim} (indices "
                f"0..{dim - 1}); " + (f"use % {dim} or " if c is not None else "") +
                f"declare num_barriers={bound + 1}", loc=op.loc, related=related)
        what = "index" if size is None else f"tg.ds start (size {size})"
        raise KernelError(
            f"this {what} in dimension {d} can be {bound}{how}, past the end of {ref.type} (size {dim} there); "
            f"keep it below {dim - (size or 1) + 1}", loc=op.loc, related=related)
