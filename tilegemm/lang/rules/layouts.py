"""Transposed shared-memory views (tg.transpose_ref) and MN-major MMA operands.

A transpose moves no data: the buffer keeps its stored layout, which its
transforms declare and TMA writes, and the tensor core reads the view as a
K-major or MN-major operand (`analysis.operand_major`). Hence:

* TMA copies move tiles in their stored layout: their SMEM side is never a
  transposed view (copy into the buffer, transpose where the MMA reads it).
* The tensor cores read MN-major operands only as the types their instruction
  table says (f16, bf16): an fp8 operand must be K-major (A stored [M, K], B
  read through a transpose of a [N, K] tile), and any other type is refused.
* A K-major B read from one stage of a ring of SMEM buffers has N a multiple
  of 16: nvidia-cutlass-dsl 4.8.1 aborts the process compiling such a ring at N
  = 8 mod 16 (a single buffer of that N compiles), so the verifier refuses it.
* An MN-major operand is read in swizzle atoms along its contiguous M or N
  dimension (64 f16 wide for a 128-byte swizzle): the buffer's stored rows must
  hold the swizzle the operand's extent needs, and a slice of the buffer (the
  64-row halves of A a consumer multiplies) must start on an atom, since a
  window starting inside one has no shared-memory descriptor.
"""
import math

from ...errors import KernelError
from .. import dtypes
from ..analysis import K_MAJOR, MN_MAJOR, alloc_of, known_multiple, operand_major, root_ref, view_chain
from ..arch import swizzle_for
from ..scratch import swizzle_of
from ..tensorcore import instruction_of
from ..types import MemorySpace
from ..verify import rule
from .swizzle import MMA_OPS, mma_operands, swizzle_words, transforms_for


def transposes_in(ref):
    """The `transpose_ref` ops among the views `ref` is taken through, innermost first."""
    return [op for op in view_chain(ref) if op.kind == "transpose_ref"]


@rule("copy_gmem_to_smem", "copy_smem_to_gmem")
def tma_copies_the_stored_layout(op, ctx):
    """The SMEM side of a TMA copy is a buffer (or window) in its stored order, never a transposed view."""
    smem, what = (op.arg("dst"), "destination") if op.kind == "copy_gmem_to_smem" else (op.arg("src"), "source")
    transposes = transposes_in(smem)
    if not transposes:
        return
    raise KernelError(
        f"{op.kind}: the SMEM {what} ({smem.type}) is a transposed view; TMA moves tiles in the buffer's stored "
        f"layout, so copy the untransposed buffer (shape {root_ref(smem).shape}, or a window of it) and pass "
        "tg.transpose_ref(buffer, permutation) to the MMA that reads it", loc=op.loc,
        related=[("transposed at", t.loc) for t in transposes])


@rule(*MMA_OPS)
def mn_major_operands_are_16_bit(op, ctx):
    """An MMA reads an SMEM operand MN-major only as a type its instruction reads so (f16 or bf16); an fp8
    operand is K-major."""
    instruction = instruction_of(op)
    for which, operand in mma_operands(op):
        if getattr(operand, "space", None) != MemorySpace.SMEM or instruction.reads_mn_major(operand.dtype):
            continue
        if operand.dtype in instruction.inputs:
            if operand_major(which, operand) == K_MAJOR:
                continue
            raise KernelError(
                f"{op.kind} reads {dtypes.name(operand.dtype)} operand {which} {_MN[which]}-major ({operand.type}); "
                f"{instruction.name} reads 8-bit operands only K-major: {_K_MAJOR_FIX[which]}",
                loc=op.loc, related=[("transposed at", t.loc) for t in transposes_in(operand)])
        if operand.type.permutation is not None:   # a type no MMA takes: the MMA dtype rules say why otherwise
            raise KernelError(
                f"{op.kind} reads operand {which} through a transposed view ({operand.type}) of "
                f"{dtypes.name(operand.dtype)} data; tilegemm's MMAs multiply f16 or bf16, the only types the "
                "tensor cores read both K-major and MN-major: store the tile as f16 or bf16",
                loc=op.loc, related=[("transposed at", t.loc) for t in transposes_in(operand)])


_MN = {"A": "M", "B": "N"}
_K_MAJOR_FIX = {"A": "store A as [M, K] (K contiguous) and pass the tile untransposed",
                "B": "store B as [N, K] (K contiguous, a linear layer's weight) and pass tg.transpose_ref(tile, "
                     "(1, 0)) (tile.T)"}


@rule(*MMA_OPS)
def mn_major_operands_cover_whole_swizzle_atoms(op, ctx):
    """An MN-major SMEM operand's buffer holds the swizzle its extent needs, and its window starts on an atom."""
    for which, operand in mma_operands(op):
        if (getattr(operand, "space", None) == MemorySpace.SMEM and operand.dtype in instruction_of(op).inputs
                and operand_major(which, operand) == MN_MAJOR):   # other dtypes: the MMA dtype rules say why
            check_mn_major_window(op, which, operand)


def check_mn_major_window(op, which, operand):
    """Raises unless the buffer's stored rows can take the operand's swizzle and the window starts on an atom."""
    t, buffer = operand.type, root_ref(operand)
    name, size = dtypes.name(t.dtype), dtypes.itemsize(t.dtype)
    mn = "M" if which == "A" else "N"
    extent = t.shape[t.contiguous_dim]
    needed = swizzle_for(extent * size)
    stored_bytes = buffer.shape[-1] * size
    alloc = alloc_of(operand)
    related = [("the buffer is declared at", alloc.loc)] if alloc is not None else []
    if needed is not None and stored_bytes % needed:
        raise KernelError(
            f"{op.kind} reads operand {which} ({t}) {mn}-major: its {extent} {name} along {mn} need "
            f"{swizzle_words(needed)}, but the buffer {buffer.type} stores rows of {buffer.shape[-1]} {name} = "
            f"{stored_bytes} bytes, which that swizzle cannot tile; make the stored {mn} extent a multiple of "
            f"{needed // size} (e.g. {-(-buffer.shape[-1] // (needed // size)) * (needed // size)}) so the buffer "
            f"can be declared with {transforms_for(needed, t.dtype)}", loc=op.loc, related=related)
    atom = swizzle_of(buffer.type.transforms) // size
    starts = contiguous_starts(operand)
    if math.gcd(*(known_multiple(x) for x in starts)) % atom == 0:
        return
    static = sum(starts) if all(isinstance(x, int) for x in starts) else None
    at = f"element {static}" if static is not None else "an offset not known to be a multiple of it"
    raise KernelError(
        f"{op.kind} reads operand {which} ({t}) {mn}-major, in swizzle atoms of {atom} {name} along {mn}; its "
        f"window starts at {at} along {mn} of the buffer, inside an atom, where no shared-memory descriptor can "
        f"start: start it at a multiple of {atom} (e.g. tg.ds(i * {extent}, {extent}))", loc=op.loc,
        related=related + [("the window is taken at", v.loc) for v in view_chain(operand) if v.kind == "view"])


def contiguous_starts(ref):
    """The terms (ints or scalars) adding up to the start of `ref`'s window along its buffer's stored last
    dimension."""
    return [view.arg("starts")[view.arg("ref").type.contiguous_dim] for view in view_chain(ref) if view.kind == "view"]
