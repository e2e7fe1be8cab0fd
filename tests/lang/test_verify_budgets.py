"""Verifier: per-block budgets (shared memory, tensor memory, accumulator registers, threads, cluster size)."""
import pytest

import tilegemm as tg
from tilegemm.lang.analysis import tmem_columns
from tilegemm.lang.types import MemorySpace, RefType

from .helpers import F16, F32, raises_at, spec, trace


def allocate(*buffers, **config):
    """Traces a kernel that only allocates `buffers`."""
    return trace(lambda x, out, *refs: None, spec(128, 128), scratch=list(buffers), **config)


def test_shared_memory_over_227_kib_lists_the_largest_allocations():
    with raises_at("b_stages", "needs 257 KiB of shared memory per block, over the 227 KiB a block may use",
                   "H100/H200", "fewer pipeline stages or smaller tiles", "128 KiB smem<4x64x256xf16> at",
                   "64 KiB smem<4x128x64xf16> at") as err:
        allocate(tg.SMEM((4, 128, 64), F16),  # @a_stages
                 tg.SMEM((4, 64, 256), F16),  # @b_stages
                 tg.SMEM((128, 256), F16),
                 tg.Barrier(num_barriers=4))
    err.names("a_stages", "64 KiB")


def test_shared_memory_is_budgeted_as_the_lowering_lays_it_out():
    # mbarriers first, then each buffer at a 1024-byte boundary: 8 barriers take a whole KiB
    allocate(tg.SMEM((226 * 1024 // 2,), F16), tg.Barrier(num_barriers=8))
    with raises_at("one_byte_more", "needs 228 KiB of shared memory per block"):
        allocate(tg.SMEM((226 * 1024 // 2 + 1,), F16),  # @one_byte_more
                 tg.Barrier(num_barriers=8))


def test_scoped_shared_memory_counts_too():
    def body(x, out, big):
        tg.run_scoped(lambda extra: None, tg.SMEM((64, 256), F16))  # @scoped

    with raises_at("big", "needs 232 KiB of shared memory") as err:
        trace(body, spec(128, 128), scratch=[tg.SMEM((100 * 1024,), F16)])  # @big
    err.names("scoped", "32 KiB smem<64x256xf16> at")


def test_tensor_memory_over_512_columns():
    with raises_at("tmem", "allocates 640 columns of tensor memory per block, over the 512 columns",
                   "512 columns tmem<128x512xf32> at"):
        allocate(tg.TMEM((128, 512), F32),  # @tmem
                 tg.TMEM((128, 256), F16))


def test_f16_tensor_memory_packs_two_values_per_column():
    assert tmem_columns(RefType((128, 512), F16, MemorySpace.TMEM)) == 256


def test_tensor_memory_holds_f32_accumulators_only():
    with raises_at("f16_tmem", "cannot be lowered for sm_100a", "allocate TMEM as float32"):
        allocate(tg.TMEM((128, 256), F32), tg.TMEM((128, 64), F16))  # @f16_tmem


@pytest.mark.parametrize("lanes", [256, 64])
def test_tensor_memory_has_128_lanes(lanes):
    with raises_at("lanes", "(lanes, columns) with all 128 lanes", "tg.TMEM((128, 256), tg.float32)",
                   "an M=64 one would be spread over the four 32-lane quarters"):
        allocate(tg.TMEM((lanes, 64), F32))  # @lanes


def test_an_accumulator_over_255_registers_per_thread():
    with raises_at("acc", "need 256 registers per CUDA thread", "more than the 255", "two consumer warpgroups",
                   "tg.ACC((64, 256))"):
        allocate(tg.ACC((128, 256)))  # @acc


def test_accumulators_live_together_add_up():
    with raises_at("acc2", "need 256 registers per CUDA thread", "fewer accumulators or a narrower N tile"):
        allocate(tg.ACC((64, 256)), tg.ACC((64, 256)))  # @acc2


def test_accumulators_of_different_warpgroups_do_not_add_up():
    def body(x, out):
        wg = tg.axis_index("wg")
        for i in range(2):
            @tg.when(wg == i)
            def _():
                tg.run_scoped(lambda acc: None, tg.ACC((64, 256)))

    trace(body, spec(128, 128), num_threads=2, thread_name="wg")


def test_at_most_8_warpgroups_per_block():
    def body(x, out):  # @nine
        pass

    with raises_at("nine", "num_threads=9 asks for 9 warpgroups = 1152 CUDA threads", "at most 8 warpgroups"):
        trace(body, spec(128, 128), num_threads=9)


def test_at_most_16_blocks_per_cluster():
    def body(x, out):  # @cluster
        pass

    with raises_at("cluster", "cluster (4, 8) has 32 blocks", "at most 16 blocks (8 portably)"):
        trace(body, spec(128, 128), cluster=(4, 8))


def test_tensor_memory_of_the_blocks_an_sm_holds_at_once_fits_in_512_columns_when_clusters_wait_for_each_other():
    pair = dict(cluster=(2,), cluster_names=("pair",))
    allocate(tg.TMEM((128, 256), F32), tg.SMEM((50 * 1024,), F16), **pair)  # 100 KiB: 2 blocks an SM, 512 columns
    allocate(tg.TMEM((128, 256), F32), tg.SMEM((32 * 1024,), F16))  # no cluster: blocks only queue for TMEM
    with raises_at("shared", "3 blocks of this kernel fit on one SM at once (by their 65 KiB of shared memory and "
                   "128 threads)", "each allocates 256 columns of tensor memory (160 used, rounded up",
                   "768 columns, over the 512 of an SM", "a deadlock", "Allocate at most 128 columns per block"):
        allocate(tg.TMEM((128, 160), F32),  # @shared
                 tg.SMEM((32 * 1024,), F16), **pair)
