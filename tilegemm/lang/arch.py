"""Hardware limits the verifier enforces (shared by Hopper sm_90a and Blackwell sm_100a)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Per-block limits of the target GPU family; `devices` names it in error messages."""
    devices: str = "H100/H200/B200"
    smem_per_block: int = 227 * 1024     # bytes of dynamic shared memory one block may use
    max_threads_per_block: int = 1024    # CUDA threads, i.e. 8 warpgroups
    tmem_columns: int = 512              # Blackwell tensor memory columns per SM (32-bit cells)
    tmem_lanes: int = 128                # Blackwell tensor memory rows
    max_cluster_size: int = 16           # non-portable maximum (needs the opt-in attribute)
    portable_cluster_size: int = 8
    registers_per_sm: int = 64 * 1024
    max_registers_per_thread: int = 255


DEFAULT_LIMITS = Limits()
WARPGROUP_THREADS = 128
MMA_K = 16  # K of one f16/bf16 WGMMA or tcgen05 instruction
WGMMA_M = 64  # rows of one Hopper WGMMA instruction's accumulator

SMEM_ALIGN = 1024  # bytes: every shared-memory buffer starts at a multiple (the 128-byte swizzle atom repeats there)
MBARRIER_BYTES = 8


def shared_storage_bytes(buffer_bytes, num_barriers):
    """Bytes of one block's shared storage as tilegemm lays it out: the mbarriers first, then each buffer at a
    SMEM_ALIGN boundary. The verifier budgets exactly what the lowering allocates."""
    offset = MBARRIER_BYTES * num_barriers
    for nbytes in buffer_bytes:
        offset = -(-offset // SMEM_ALIGN) * SMEM_ALIGN + nbytes
    return -(-offset // SMEM_ALIGN) * SMEM_ALIGN if buffer_bytes else offset
