"""Hardware limits the verifier and the interpreter enforce (shared by Hopper sm_90a and Blackwell sm_100a)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Per-block and per-SM limits of the target GPU family; `devices` names it in error messages."""
    devices: str = "H100/H200/B200"
    smem_per_block: int = 227 * 1024     # bytes of dynamic shared memory one block may use
    smem_per_sm: int = 228 * 1024        # bytes of shared memory the blocks resident on one SM share
    smem_reserved_per_block: int = 1024  # bytes the runtime takes from every resident block
    max_threads_per_block: int = 1024    # CUDA threads, i.e. 8 warpgroups
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    tmem_columns: int = 512              # Blackwell tensor memory columns per SM (32-bit cells)
    tmem_lanes: int = 128                # Blackwell tensor memory rows
    max_cluster_size: int = 16           # non-portable maximum (needs the opt-in attribute)
    portable_cluster_size: int = 8
    registers_per_sm: int = 64 * 1024
    max_registers_per_thread: int = 255


DEFAULT_LIMITS = Limits()
WARPGROUP_THREADS = 128
WARPS_PER_WARPGROUP = 4
MMA_K = 16  # K of one f16/bf16 WGMMA or tcgen05 instruction
WGMMA_M = 64  # rows of one Hopper WGMMA instruction's accumulator

SMEM_ALIGN = 1024  # bytes: every shared-memory buffer starts at a multiple (the 128-byte swizzle atom repeats there)
MBARRIER_BYTES = 8
MBARRIER_MAX_COUNT = 2 ** 20 - 1  # largest arrival count and pending transaction-byte count of one mbarrier phase

# Kernel arrays are indexed with int32 scalars (tilegemm's index arithmetic, TMA's signed 32-bit box
# coordinates), so a dimension may hold at most 2^31 elements; TMA's own limit, 2^32, is looser.
MAX_ARRAY_DIM = 2 ** 31

TMA_MAX_BOX = 256          # elements per TMA box dimension
TMA_MAX_RANK = 5           # dimensions of a TMA tensor map
TMA_ALIGN = 16             # bytes: box rows, global strides and aligned starts
TMA_MAX_STRIDE = 2 ** 40   # bytes: every global stride of a TMA tensor map is below this

TMEM_LANES_PER_WARP = 32   # warp w of a warpgroup reaches only TMEM lanes [32 (w % 4), 32 (w % 4) + 32)
TMEM_MIN_ALLOC_COLUMNS = 32  # tcgen05.alloc reserves a power of two of at least this many columns

SETMAXNREG_MIN, SETMAXNREG_MAX, SETMAXNREG_STEP = 24, 256, 8  # setmaxnreg counts: multiples of 8 in [24, 256]


def shared_storage_bytes(buffer_bytes, num_barriers):
    """Bytes of one block's shared storage as tilegemm lays it out: the mbarriers first, then each buffer at a
    SMEM_ALIGN boundary. The verifier budgets exactly what the lowering allocates."""
    offset = MBARRIER_BYTES * num_barriers
    for nbytes in buffer_bytes:
        offset = -(-offset // SMEM_ALIGN) * SMEM_ALIGN + nbytes
    return -(-offset // SMEM_ALIGN) * SMEM_ALIGN if buffer_bytes else offset


def launch_registers(num_threads, limits=DEFAULT_LIMITS):
    """Registers per CUDA thread a block of `num_threads` warpgroups starts with when the register file bounds
    it (ptxas gives each thread an equal share, in steps of 8), or None when the share exceeds what a thread
    can have and the count is whatever ptxas allocates."""
    share = limits.registers_per_sm // (WARPGROUP_THREADS * num_threads)
    if share > limits.max_registers_per_thread:
        return None
    return share // SETMAXNREG_STEP * SETMAXNREG_STEP


def tmem_allocation_columns(columns):
    """Columns tcgen05.alloc reserves for a block using `columns`: a power of two of at least 32."""
    return max(TMEM_MIN_ALLOC_COLUMNS, 1 << max(0, columns - 1).bit_length())


def resident_blocks(smem_bytes, threads, limits=DEFAULT_LIMITS):
    """The most blocks of a kernel one SM can hold at once, from its shared memory and threads per block
    (registers may allow fewer; they are only known after ptxas)."""
    by_smem = limits.smem_per_sm // (smem_bytes + limits.smem_reserved_per_block)
    return max(1, min(by_smem, limits.max_threads_per_sm // threads, limits.max_blocks_per_sm))
