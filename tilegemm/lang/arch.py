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
