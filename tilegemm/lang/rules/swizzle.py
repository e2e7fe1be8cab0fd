"""Shared-memory swizzles: legal for the buffer's minor dimension, and the same on the TMA and MMA sides.

A swizzle XOR-permutes 16-byte chunks within rows of `swizzle` bytes, so a
buffer's contiguous (minor) dimension must hold whole swizzle rows, and a
TilingTransform paired with it must tile by (8, swizzle / itemsize).

Two agents touch an operand buffer: TMA copies write it in the layout the
buffer declares, and the tensor core reads it with the layout the MMA lowering
chooses. That choice is the one CuTe's layout-atom helpers make
(`hopper_helpers.get_smem_layout_atom`, `blackwell_helpers.get_smem_layout_atom_ab`):
the largest swizzle dividing the operand's contiguous extent, i.e.
`arch.swizzle_for(minor_bytes)`. The contiguous dimension is the stored last one,
also when the MMA reads a transposed view (tg.transpose_ref) of the buffer. If the declared swizzle differs, TMA and MMA
disagree about where every element lives; the verifier names both lines.
"""
from ...errors import KernelError
from .. import dtypes
from ..analysis import alloc_of, root_ref
from ..arch import NO_SWIZZLE, SWIZZLES, swizzle_for, swizzle_tiling
from ..scratch import SwizzleTransform, swizzle_of, tiling_of
from ..tensorcore import BY_OP
from ..types import MemorySpace
from ..verify import graph_rule, rule


def transforms_for(swizzle, dtype):
    """The transforms that declare `swizzle` for `dtype`, spelled as the user would write them."""
    if swizzle == NO_SWIZZLE:
        return "no SwizzleTransform"
    return (f"transforms=(tg.TilingTransform({swizzle_tiling(swizzle, dtypes.itemsize(dtype))}), "
            f"tg.SwizzleTransform({swizzle}))")


@rule("alloc")
def swizzle_fits_minor_dim(op, ctx):
    """An SMEM alloc's swizzle is 32, 64 or 128 bytes, divides its rows, and matches its tiling."""
    if op.result.space != MemorySpace.SMEM:
        return
    t = op.result.type
    if not any(isinstance(tr, SwizzleTransform) for tr in t.transforms):
        return
    swizzle = swizzle_of(t.transforms)
    name = dtypes.name(t.dtype)
    minor = t.shape[-1]
    minor_bytes = minor * dtypes.itemsize(t.dtype)
    if swizzle not in SWIZZLES:
        raise KernelError(f"SwizzleTransform({swizzle}) is not a hardware swizzle: use 32, 64 or 128 bytes "
                          "(or no SwizzleTransform)", loc=op.loc)
    if minor_bytes % swizzle:
        fit = swizzle_for(minor_bytes)
        legal = (f"use {transforms_for(fit, t.dtype)} (find_swizzle gives {fit})" if fit in SWIZZLES else
                 f"make the minor dimension a multiple of {32 // dtypes.itemsize(t.dtype)} elements or drop the "
                 "SwizzleTransform")
        raise KernelError(f"{t} declares a {swizzle}-byte swizzle but its minor dimension is {minor} {name} = "
                          f"{minor_bytes} bytes, not a multiple of {swizzle}; {legal}", loc=op.loc)
    tiling = tiling_of(t.transforms)
    if tiling is None:
        return
    want = swizzle_tiling(swizzle, dtypes.itemsize(t.dtype))
    if tuple(tiling) != want:
        raise KernelError(f"{t}: a {swizzle}-byte swizzle of {name} needs TilingTransform({want}) (8 rows of "
                          f"{swizzle} bytes), got TilingTransform({tuple(tiling)})", loc=op.loc)
    if len(t.shape) < 2 or t.shape[-2] % want[0]:
        raise KernelError(f"{t}: TilingTransform({want}) needs the second-to-last dimension to be a multiple "
                          f"of {want[0]}", loc=op.loc)


MMA_OPS = tuple(BY_OP)   # the ops issuing tensor-core instructions (lang/tensorcore.py): operands acc, a, b


def mma_operands(op):
    """(("A", a), ("B", b)) of an MMA op."""
    return ("A", op.arg("a")), ("B", op.arg("b"))


@graph_rule
def mma_and_tma_swizzles_agree(graph, ctx):
    """Every SMEM MMA operand is declared with the swizzle the MMA reads it with (see the module docstring)."""
    tma_writes = {}
    for op in graph.walk():
        if op.kind == "copy_gmem_to_smem":
            tma_writes.setdefault(id(root_ref(op.arg("dst"))), op)
    for op in graph.walk():
        if op.kind not in MMA_OPS:
            continue
        for which, operand in mma_operands(op):
            if getattr(operand, "space", None) == MemorySpace.SMEM:
                check_operand_swizzle(op, which, operand, tma_writes.get(id(root_ref(operand))))


def check_operand_swizzle(op, which, operand, tma_write):
    """Raises unless `operand` is declared with the swizzle the MMA reads it with; names the TMA write."""
    t = operand.type
    contiguous = t.contiguous_dim
    minor_bytes = t.shape[contiguous] * dtypes.itemsize(t.dtype)
    needed = swizzle_for(minor_bytes)
    declared = swizzle_of(t.transforms)
    alloc = alloc_of(operand)
    related = [("the buffer is declared at", alloc.loc)] if alloc is not None else []
    which_dim = "" if t.permutation is None else f" (dimension {contiguous}, stored last)"
    extent = (f"its contiguous dimension{which_dim} is {t.shape[contiguous]} {dtypes.name(t.dtype)} = "
              f"{minor_bytes} bytes")
    if needed is None:
        raise KernelError(f"{op.kind} operand {which} ({t}): {extent}, not a multiple of 16 bytes, which no "
                          "tensor-core shared-memory layout can hold", loc=op.loc, related=related)
    if needed == declared:
        return
    if tma_write is not None:
        related.append((f"TMA writes it with {swizzle_words(declared)} at", tma_write.loc))
    raise KernelError(
        f"{op.kind} reads operand {which} ({t}) with {swizzle_words(needed)} ({extent}), but the buffer is "
        f"declared with {swizzle_words(declared)}, so its writers (TMA) and the tensor core disagree on "
        f"where each element lives; "
        f"declare it with {transforms_for(needed, t.dtype)}", loc=op.loc, related=related)


def swizzle_words(swizzle):
    """'a 128-byte swizzle' or 'no swizzle'."""
    return "no swizzle" if swizzle == NO_SWIZZLE else f"a {swizzle}-byte swizzle"
