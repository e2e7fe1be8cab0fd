"""The bit layouts of the tensor-core descriptors, from the PTX ISA, and their decoders.

Shared memory matrix descriptor of `wgmma.mma_async` (PTX ISA, "Asynchronous
Warpgroup Level Matrix Multiply-Accumulate Instructions" > "Matrix Descriptor
Format"), a 64-bit value:

    bits  0-13  matrix start address >> 4
    bits 16-29  leading dimension byte offset >> 4 (LBO)
    bits 32-45  stride dimension byte offset >> 4 (SBO)
    bits 49-51  matrix base offset (0 for 1024-byte aligned swizzle atoms)
    bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte

Shared memory descriptor of `tcgen05.mma` (PTX ISA, "TensorCore 5th Generation
Family Instructions" > "Matrix Descriptors" > "Shared Memory Descriptor"):

    bits  0-13  matrix start address >> 4
    bits 16-29  leading dimension byte offset >> 4 (LBO)
    bits 32-45  stride dimension byte offset >> 4 (SBO)
    bits 46-48  fixed constant 0b001
    bits 49-51  matrix base offset
    bit  52     leading dimension stride mode: 0 relative byte offset, 1 absolute address
    bits 61-63  swizzle mode: 0 none, 1 128-byte with 32-byte atomicity, 2 128-byte, 4 64-byte, 6 32-byte

Instruction descriptor of `tcgen05.mma` .kind::f16, .kind::tf32 and .kind::f8f6f4 (PTX ISA,
"TensorCore 5th Generation Family Instructions" > "Instruction Descriptor"),
a 32-bit value:

    bits  0-1   sparsity selector      bit 2  sparsity enable      bit 3  saturate
    bits  4-5   D type: 0 F16, 1 F32
    bits  7-9   A type, bits 10-12 B type: 0 F16, 1 BF16 (.kind::f16); 2 TF32 (.kind::tf32);
                0 E4M3, 1 E5M2 (.kind::f8f6f4)
    bit  13     negate A               bit 14 negate B
    bit  15     transpose A (0: A is K-major)      bit 16 transpose B (0: B is K-major)
    bits 17-22  N >> 3                 bits 24-28  M >> 4
    bits 30-31  maximum shift (.ws only)
"""
from dataclasses import dataclass

from ...lang import dtypes

# Swizzle widths in bytes by the mode field of each descriptor (None: no swizzle, written 16 by tilegemm).
WGMMA_SWIZZLE = {0: 16, 1: 128, 2: 64, 3: 32}
TCGEN05_SWIZZLE = {0: 16, 2: 128, 4: 64, 6: 32}      # mode 1 (128-byte, 32-byte atomicity) is not used here
TCGEN05_VERSION = 1

# Operand types of the instruction descriptor, each with the instruction kind whose codes it uses, and the D type field.
ITYPE = {dtypes.float16: 0, dtypes.bfloat16: 1, dtypes.float8_e4m3fn: 0, dtypes.float8_e5m2: 1}
KIND = {dtypes.float16: "f16", dtypes.bfloat16: "f16", dtypes.float8_e4m3fn: "f8f6f4", dtypes.float8_e5m2: "f8f6f4"}
DTYPE = {dtypes.float16: 0, dtypes.float32: 1}


def bits(value, lo, hi):
    """Bits lo..hi (inclusive) of `value`."""
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


@dataclass(frozen=True)
class SmemDescriptor:
    """A decoded shared-memory matrix descriptor (byte values, not the >> 4 fields)."""
    start: int           # byte address (an offset into the dynamic shared memory when read with it at 0)
    lbo: int             # leading dimension byte offset
    sbo: int             # stride dimension byte offset
    base_offset: int
    swizzle: int         # bytes: 16 (none), 32, 64, 128
    version: int = None  # tcgen05 only: the fixed 0b001
    lbo_mode: int = None  # tcgen05 only: 0 relative

    def fields(self):
        """Everything but the start address: what must agree for every instruction of one operand."""
        return dict(lbo=self.lbo, sbo=self.sbo, base_offset=self.base_offset, swizzle=self.swizzle,
                    version=self.version, lbo_mode=self.lbo_mode)


def decode_wgmma_smem(desc):
    return SmemDescriptor(start=bits(desc, 0, 13) << 4, lbo=bits(desc, 16, 29) << 4, sbo=bits(desc, 32, 45) << 4,
                          base_offset=bits(desc, 49, 51), swizzle=WGMMA_SWIZZLE[bits(desc, 62, 63)])


def decode_tcgen05_smem(desc):
    mode = bits(desc, 61, 63)
    return SmemDescriptor(start=bits(desc, 0, 13) << 4, lbo=bits(desc, 16, 29) << 4, sbo=bits(desc, 32, 45) << 4,
                          base_offset=bits(desc, 49, 51), swizzle=TCGEN05_SWIZZLE.get(mode, -mode),
                          version=bits(desc, 46, 48), lbo_mode=bits(desc, 52, 52))


@dataclass(frozen=True)
class InstrDescriptor:
    """A decoded tcgen05 .kind::f16 instruction descriptor."""
    m: int
    n: int
    d_type: int
    a_type: int
    b_type: int
    a_major_mn: bool      # transpose A: A is M-major
    b_major_mn: bool      # transpose B: B is N-major
    negate_a: bool
    negate_b: bool
    sparse: bool
    saturate: bool
    max_shift: int


def decode_tcgen05_instr(desc):
    return InstrDescriptor(m=bits(desc, 24, 28) << 4, n=bits(desc, 17, 22) << 3, d_type=bits(desc, 4, 5),
                           a_type=bits(desc, 7, 9), b_type=bits(desc, 10, 12), a_major_mn=bool(bits(desc, 15, 15)),
                           b_major_mn=bool(bits(desc, 16, 16)), negate_a=bool(bits(desc, 13, 13)),
                           negate_b=bool(bits(desc, 14, 14)), sparse=bool(bits(desc, 2, 2)),
                           saturate=bool(bits(desc, 3, 3)), max_shift=bits(desc, 30, 31))
