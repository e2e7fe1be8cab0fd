"""Hardware limits and layout sizes: the one source the verifier, the interpreter, the lowering and the model read.

Per-architecture limits are `LIMITS[arch]`; the tensor-core instructions are tabled in lang/tensorcore.py.
"""
from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class Limits:
    """Per-block and per-SM limits of one GPU architecture; `devices` names its parts in error messages."""
    devices: str
    smem_per_block: int = 227 * KIB     # bytes of dynamic shared memory one block may use
    smem_per_sm: int = 228 * KIB        # bytes of shared memory the blocks resident on one SM share
    smem_reserved_per_block: int = KIB  # bytes the runtime takes from every resident block
    max_threads_per_block: int = 1024   # CUDA threads, i.e. 8 warpgroups
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    tmem_columns: int = 0               # Blackwell tensor memory columns per SM (32-bit cells); 0: none
    tmem_lanes: int = 0                 # Blackwell tensor memory rows
    max_cluster_size: int = 16          # non-portable maximum (needs the opt-in attribute)
    portable_cluster_size: int = 8
    registers_per_sm: int = 64 * 1024
    max_registers_per_thread: int = 255
    register_granularity: int = 8       # registers per thread are allocated, and set by setmaxnreg, in steps of 8


HOPPER = Limits(devices="H100/H200")
BLACKWELL = Limits(devices="B200", tmem_columns=512, tmem_lanes=128)
AMPERE = Limits(devices="A100", smem_per_block=163 * KIB, smem_per_sm=164 * KIB, max_cluster_size=1,
                portable_cluster_size=1)
LIMITS = {"sm_80": AMPERE, "sm_90a": HOPPER, "sm_100a": BLACKWELL}
DEFAULT_LIMITS = HOPPER   # where a helper is asked without an architecture (tg.max_stages)

WARPGROUP_THREADS = 128
WARPS_PER_WARPGROUP = 4

SMEM_ALIGN = 1024  # bytes: every shared-memory buffer starts at a multiple (the 128-byte swizzle atom repeats there)
MBARRIER_BYTES = 8
MBARRIER_MAX_COUNT = 2 ** 20 - 1  # largest arrival count and pending transaction-byte count of one mbarrier phase

# Kernel arrays are indexed with int32 scalars (tilegemm's index arithmetic, TMA's signed 32-bit box
# coordinates), so a dimension may hold at most 2^31 elements; TMA's own limit, 2^32, is looser.
MAX_ARRAY_DIM = 2 ** 31

TMA_MAX_BOX = 256          # elements per TMA box dimension
TMA_MAX_RANK = 5           # dimensions of a TMA tensor map
TMA_ALIGN = 16             # bytes: box rows, global strides and aligned starts
TMA_SMEM_ALIGN = 128       # bytes: a TMA copy's SMEM side starts on a multiple (the GPU faults otherwise)
TMA_MAX_STRIDE = 2 ** 40   # bytes: every global stride of a TMA tensor map is below this
L2_PROMOTION_BYTES = (64, 128, 256)   # what a TMA load may ask L2 to fetch per miss (a tensor map's L2 promotion)

TMEM_LANES_PER_WARP = 32   # warp w of a warpgroup reaches only TMEM lanes [32 (w % 4), 32 (w % 4) + 32)
TMEM_MIN_ALLOC_COLUMNS = 32  # tcgen05.alloc reserves a power of two of at least this many columns
TMEM_ADDRESS_BYTES = 8     # the shared-memory word tcgen05.alloc writes the TMEM address into

STMATRIX_ROWS, STMATRIX_ROW_BYTES = 8, 16   # stmatrix stores 8x8 matrices of 16-bit elements, a 16-byte row each
STMATRIX_ELEMENT_BYTES = STMATRIX_ROW_BYTES // STMATRIX_ROWS
SETMAXNREG_MIN, SETMAXNREG_MAX = 24, 256  # setmaxnreg counts: multiples of register_granularity in [24, 256]

# ----------------------------------------------------------------------------- shared-memory layouts

SWIZZLES = (128, 64, 32)   # bytes of the rows a SwizzleTransform XOR-permutes 16-byte chunks within
NO_SWIZZLE = 16            # the unit the swizzles permute: an unswizzled layout (no SwizzleTransform)
SWIZZLE_ATOM_ROWS = 8      # a swizzle atom is 8 rows of `swizzle` bytes; TilingTransform tiles by it


def swizzle_for(minor_bytes):
    """The largest swizzle whose rows divide a contiguous extent of `minor_bytes` (NO_SWIZZLE if none does but
    16-byte chunks do), or None when no shared-memory layout of the tensor cores or TMA can hold it. This is
    the choice CuTe's layout-atom helpers make for MMA operands."""
    for swizzle in SWIZZLES + (NO_SWIZZLE,):
        if minor_bytes % swizzle == 0:
            return swizzle
    return None


def swizzle_tiling(swizzle, itemsize):
    """The TilingTransform tiling that goes with a `swizzle`-byte swizzle of `itemsize`-byte elements."""
    return (SWIZZLE_ATOM_ROWS, swizzle // itemsize)


def shared_storage_bytes(buffer_bytes, header_bytes):
    """Bytes of one block's shared storage as tilegemm lays it out (lang/storage.py): `header_bytes` of mbarriers
    (and TMEM words) first, then each buffer at a SMEM_ALIGN boundary, the whole rounded up to one."""
    offset = header_bytes
    for nbytes in buffer_bytes:
        offset = -(-offset // SMEM_ALIGN) * SMEM_ALIGN + nbytes
    return -(-offset // SMEM_ALIGN) * SMEM_ALIGN if buffer_bytes else offset


# ----------------------------------------------------------------------------- registers, TMEM, residency

def launch_registers(num_threads, limits=DEFAULT_LIMITS):
    """Registers per CUDA thread a block of `num_threads` warpgroups starts with when the register file bounds
    it (ptxas gives each thread an equal share, in steps of 8), or None when the share exceeds what a thread
    can have and the count is whatever ptxas allocates."""
    share = limits.registers_per_sm // (WARPGROUP_THREADS * num_threads)
    if share > limits.max_registers_per_thread:
        return None
    return share // limits.register_granularity * limits.register_granularity


def tmem_allocation_columns(columns):
    """Columns tcgen05.alloc reserves for a block using `columns`: a power of two of at least 32."""
    return max(TMEM_MIN_ALLOC_COLUMNS, 1 << max(0, columns - 1).bit_length())


def resident_blocks(smem_bytes, threads, limits=DEFAULT_LIMITS):
    """The most blocks of a kernel one SM can hold at once, from its shared memory and threads per block
    (registers may allow fewer; they are only known after ptxas)."""
    by_smem = limits.smem_per_sm // (smem_bytes + limits.smem_reserved_per_block)
    return max(1, min(by_smem, limits.max_threads_per_sm // threads, limits.max_blocks_per_sm))
