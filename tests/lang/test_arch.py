"""Hardware facts the verifier and interpreter compute from the limits: launch registers, residency, TMEM."""
from tilegemm.lang.arch import launch_registers, resident_blocks, tmem_allocation_columns


def test_a_block_starts_with_its_share_of_the_register_file_once_that_bounds_it():
    assert [launch_registers(n) for n in (1, 2, 3, 4, 8)] == [None, None, 168, 128, 64]


def test_resident_blocks_are_bounded_by_shared_memory_threads_and_the_block_limit():
    assert resident_blocks(100 * 1024, 384) == 2       # 228 KiB / (100 + 1 reserved) KiB
    assert resident_blocks(8 * 1024, 1024) == 2        # 2048 threads an SM
    assert resident_blocks(0, 32) == 32                # at most 32 blocks an SM
    assert resident_blocks(227 * 1024, 128) == 1


def test_tcgen05_alloc_reserves_a_power_of_two_of_at_least_32_columns():
    assert [tmem_allocation_columns(c) for c in (1, 32, 33, 128, 160, 256, 257, 512)] == [
        32, 32, 64, 128, 256, 256, 512, 512]
