"""The tensor-core instructions of each architecture, as data: the one table the verifier, the lowering, the
interpreter, the performance model and tg.matmul read.

Sizes follow the PTX ISA and CUTLASS's instruction traits. One instruction
computes an `m` x N x K tile: K is 32 bytes of operand (16 f16 or bf16
elements, 32 fp8 ones); N is a multiple of a step up to 256. An instruction
takes the same time whatever its operand type, so the tensor rate in FLOP/s
scales with K: 8-bit operands run at twice the 16-bit rate (`rate`). A WGMMA (Hopper) is 64 rows
and N a multiple of 8, accumulating into the registers of a warpgroup; a
tcgen05 MMA (Blackwell) accumulates into tensor memory, and its N step depends
on the CTA group and on where A lives. The hardware also has tcgen05's M=64
per block, whose accumulator is spread over the four 32-lane quarters of TMEM;
tilegemm neither interprets nor lowers that layout, so its tcgen05 MMAs have
128 rows per block (a 2-CTA pair: 256).

The table states what tilegemm lowers: both take A and B from shared memory
(the hardware's register or TMEM A is not lowered), of one type, except that
the 8-bit floats mix: A e4m3 and B e5m2 or the other way round (`kinds`; the
PTX ISA's independent .atype and .btype of WGMMA's f8 kinds and of tcgen05's
kind::f8f6f4), as fp8 training multiplies e5m2 gradients by e4m3 weights.
16-bit operands are read K-major or MN-major (tg.transpose_ref); 8-bit floats
only K-major, so fp8 A is stored [M, K] and fp8 B [N, K]. They accumulate in
f32 (WGMMA also in f16 for f16 and fp8 operands).
"""
from dataclasses import dataclass

from . import dtypes
from .types import MemorySpace


@dataclass(frozen=True)
class MmaInstruction:
    """One tensor-core instruction family of one architecture (see the module docstring)."""
    name: str              # as the PTX ISA names it
    arch: str
    op_kind: str           # the graph op that issues it
    model_name: str        # the instruction the performance model budgets (DeviceSpec.instructions)
    m: int                 # accumulator rows of one instruction, per block
    n_steps: tuple         # ((two_cta, a_in_tmem), N step) for the modes tilegemm lowers
    max_n: int
    k_bytes: int           # operand bytes of K one instruction consumes
    accumulators: tuple    # (input dtype, accumulator dtypes)
    a_spaces: tuple        # where the A operand may live
    accumulator_space: str
    mn_major_dtypes: tuple  # input types the instruction also reads MN-major (transposed)
    kinds: tuple           # groups of input types A and B may mix within (one type alone: both that type)

    @property
    def inputs(self):
        """The operand types: A and B are each one of these (`takes`: which pairs)."""
        return tuple(d for d, _ in self.accumulators)

    def takes(self, a_dtype, b_dtype):
        """True when the instruction multiplies A of `a_dtype` by B of `b_dtype`: one type, or two of one kind."""
        return a_dtype in self.inputs and (a_dtype == b_dtype
                                           or any(a_dtype in kind and b_dtype in kind for kind in self.kinds))

    def pairs_in_words(self):
        """The operand types the instruction takes, for messages: 'both f16, both bf16 or each one of e4m3, e5m2'."""
        alone = [f"both {dtypes.name(d)}" for d in self.inputs if not any(d in kind for kind in self.kinds)]
        words = alone + [f"each one of {', '.join(dtypes.name(d) for d in kind)}" for kind in self.kinds]
        return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]

    def accumulator_dtypes(self, dtype, b_dtype=None):
        """The accumulator types the instruction allows for `dtype` operands (A `dtype` and B `b_dtype`: those
        both types allow)."""
        allowed = dict(self.accumulators)
        return tuple(d for d in allowed.get(dtype, ()) if d in allowed.get(b_dtype or dtype, ()))

    def k(self, dtype):
        """K of one instruction for operands of `dtype`."""
        return self.k_bytes // dtypes.itemsize(dtype)

    def rate(self, dtype):
        """The tensor rate for `dtype` operands relative to 16-bit ones: an instruction takes the same time
        whatever its type, so the rate scales with its K (2 for fp8)."""
        return self.k(dtype) / self.k(dtypes.float16)

    def reads_mn_major(self, dtype):
        """True when the instruction reads `dtype` operands MN-major (transposed) as well as K-major."""
        return dtype in self.mn_major_dtypes

    def n_step(self, two_cta=False, a_in_tmem=False):
        """The granularity of N in the mode (2-CTA or not, A in TMEM or not); None: the mode is not lowered."""
        return dict(self.n_steps).get((two_cta, a_in_tmem))


_16_BIT = (dtypes.float16, dtypes.bfloat16)
_F8 = (dtypes.float8_e4m3fn, dtypes.float8_e5m2)   # one kind: A and B mix (e4m3 x e5m2 and e5m2 x e4m3)
_F16_IN = ((dtypes.float16, (dtypes.float32, dtypes.float16)), (dtypes.bfloat16, (dtypes.float32,)))
_F8_IN = tuple((d, (dtypes.float32, dtypes.float16)) for d in _F8)

WGMMA = MmaInstruction(
    name="wgmma.mma_async", arch="sm_90a", op_kind="wgmma", model_name="wgmma", m=64,
    n_steps=(((False, False), 8),), max_n=256, k_bytes=32, accumulators=_F16_IN + _F8_IN,
    a_spaces=(MemorySpace.SMEM,), accumulator_space=MemorySpace.ACC, mn_major_dtypes=_16_BIT, kinds=(_F8,))

TCGEN05 = MmaInstruction(
    name="tcgen05.mma", arch="sm_100a", op_kind="tcgen05_mma", model_name="tcgen05", m=128,
    # CUTLASS SM100_MMA_F16BF16_SS: 1-CTA N in steps of 8, 2-CTA in steps of 16 (the hardware's A-in-TMEM
    # forms, steps of 16 and 32, are not lowered).
    n_steps=(((False, False), 8), ((True, False), 16)), max_n=256,
    # kind::f16 for 16-bit operands, kind::f8f6f4 for fp8 (CUTLASS SM100_MMA_F8F6F4_SS), both into f32.
    k_bytes=32, accumulators=tuple((d, (dtypes.float32,)) for d in _16_BIT + _F8),
    a_spaces=(MemorySpace.SMEM,), accumulator_space=MemorySpace.TMEM, mn_major_dtypes=_16_BIT, kinds=(_F8,))

INSTRUCTIONS = {"sm_90a": (WGMMA,), "sm_100a": (TCGEN05,)}   # per architecture, the tensor-core instructions
BY_OP = {i.op_kind: i for table in INSTRUCTIONS.values() for i in table}
INPUT_DTYPES = tuple(dict.fromkeys(d for table in INSTRUCTIONS.values() for i in table for d in i.inputs))
# The input types every instruction reads K-major and MN-major alike (f16, bf16): those a kernel taking its
# operands in any layout accepts; fp8 operands are K-major only.
ANY_LAYOUT_DTYPES = tuple(d for d in INPUT_DTYPES
                          if all(i.reads_mn_major(d) for table in INSTRUCTIONS.values() for i in table))


def instruction_of(op):
    """The MmaInstruction an MMA op (wgmma, tcgen05_mma) issues, or None for other ops."""
    return BY_OP.get(op.kind)


def tensor_rate(model_name, dtype):
    """The rate of the tensor-core path `model_name` ('wgmma', 'tcgen05') on `dtype` operands relative to its
    16-bit rate (1.0 for a type it does not take: the model reports that problem separately)."""
    instruction = next(i for i in BY_OP.values() if i.model_name == model_name)
    return instruction.rate(dtype) if dtype in instruction.inputs else 1.0


def model_instructions(arch):
    """The MMA paths the performance model budgets on `arch`: CUDA-core FMA and its tensor-core instructions."""
    return ("fma",) + tuple(i.model_name for i in INSTRUCTIONS.get(arch, ()))
