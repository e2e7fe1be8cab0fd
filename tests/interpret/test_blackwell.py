"""Blackwell kernels: per-warp work in core_map, tcgen05 MMAs with TMEM, 2-CTA pairs, persistent tiles."""
import os

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import load_example, random_inputs, relative_error

from .kernels import at_line, blackwell_matmul


def test_each_warp_of_core_map_runs_the_region_with_its_own_warp_index():
    @tg.kernel(out_shape=tg.ShapeDtype((4, 128), tg.float32),
               scratch_shapes=[tg.SMEM((4, 128), tg.float32), tg.Barrier(num_arrivals=4)])
    def per_warp(x, y, smem, loaded):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            warp = tg.axis_index("warp")
            tg.copy_gmem_to_smem(x.at[3 - warp], smem.at[warp], loaded)
        tg.barrier_wait(loaded)
        y[...] = smem[...]

    x = np.arange(4 * 128, dtype=np.float32).reshape(4, 128)
    np.testing.assert_array_equal(per_warp(x, interpret=True), x[::-1])


@pytest.mark.parametrize("collective", [False, True], ids=["1-cta", "2-cta"])
@pytest.mark.parametrize("m, n, k, blocks", [(256, 256, 256, 2), (300, 200, 136, 3), (128, 128, 64, 4)])
def test_tcgen05_matmul_matches_numpy(m, n, k, blocks, collective):
    a, b = random_inputs(m, n, k, tg.float16)
    c = blackwell_matmul(m, n, k, blocks=blocks, collective=collective)(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_bfloat16_operands_accumulate_in_f32():
    m, n, k = 128, 128, 256
    a, b = random_inputs(m, n, k, tg.bfloat16)
    c = blackwell_matmul(m, n, k, dtype=tg.bfloat16, collective=True, blocks=1)(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


@pytest.mark.parametrize("collective", [False, True], ids=["1-cta", "2-cta"])
def test_mma_overwriting_tmem_an_unfinished_async_load_reads_is_a_race(collective):
    m, n, k = 256, 512, 64  # one block walks 4 tiles through the two accumulator slots
    kernel = blackwell_matmul(m, n, k, blocks=1, collective=collective, release_tmem_early=True)
    with pytest.raises(tg.RaceError) as err:
        kernel(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('tcgen05')}: tcgen05_mma ") and "writes TMEM 'acc_tmem'" in message
    assert "the async_load_tmem at" in message and "tg.wait_load_tmem()" in message


def test_only_the_leader_block_issues_a_2cta_mma():
    @tg.kernel(out_shape=tg.ShapeDtype((8,), tg.float32), grid_names=("i",), cluster=(2,), cluster_names=("x",),
               scratch_shapes=[tg.SMEM((128, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, 16), tg.float16, transforms=tg.mma_transforms(16, tg.float16)),
                               tg.TMEM((128, 32), tg.float32, collective=True)])
    def wrong_block(y, a_smem, b_smem, acc):
        @tg.when(tg.axis_index("x") == 1)
        def _():
            tg.tcgen05_mma(acc, a_smem, b_smem, collective_axis="x")

    with pytest.raises(tg.KernelError, match="issued by the leader block of the pair only"):
        wrong_block(interpret=True)


def relayed_mma_completion(*, relay_orders_tensor_core):
    """Warpgroup 0 runs an MMA and waits for it, then tells warpgroup 1 through `relay`; warpgroup 1 loads TMEM."""
    operand = [tg.SMEM((128, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
               tg.SMEM((64, 32), tg.float16, transforms=tg.mma_transforms(32, tg.float16))]

    @tg.kernel(out_shape=tg.ShapeDtype((128, 32), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[*operand, tg.TMEM((128, 32), tg.float32), tg.Barrier(num_arrivals=2),
                               tg.Barrier(orders_tensor_core=True),
                               tg.Barrier(orders_tensor_core=relay_orders_tensor_core)])
    def kernel(a, b, c, a_smem, b_smem, acc, loaded, mma_done, relay):
        wg = tg.axis_index("wg")

        @tg.when(wg == 0)
        def _():
            tg.copy_gmem_to_smem(a, a_smem, loaded)
            tg.copy_gmem_to_smem(b, b_smem, loaded)
            tg.barrier_wait(loaded)
            tg.tcgen05_mma(acc, a_smem, b_smem, mma_done, accumulate=False)  # line: relayed mma
            tg.barrier_wait(mma_done)
            tg.barrier_arrive(relay)

        @tg.when(wg == 1)
        def _():
            tg.barrier_wait(relay)
            part = tg.async_load_tmem(acc)  # line: relayed load
            tg.wait_load_tmem()
            c[...] = part
    return kernel


def test_a_tmem_load_ordered_after_an_mma_only_by_a_plain_barrier_misses_the_tcgen05_fence():
    a, b = np.ones((128, 64), np.float16), np.ones((64, 32), np.float16)
    np.testing.assert_array_equal(relayed_mma_completion(relay_orders_tensor_core=True)(a, b, interpret=True), 64)
    with pytest.raises(tg.RaceError) as err:
        relayed_mma_completion(relay_orders_tensor_core=False)(a, b, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('relayed load', __file__)}: async_load_tmem (block (x=0) thread wg=1)")
    assert f"the tcgen05_mma at {at_line('relayed mma', __file__)}" in message
    assert "tcgen05.fence::after_thread_sync" in message and "orders_tensor_core=True" in message


def test_without_acc_free_the_persistent_rung_running_ahead_overwrites_the_peers_accumulator(tmp_path):
    """Rung 5's TMA warp loads the next tile during the epilogue, so the leader's next MMAs could start before
    the other block has read its accumulator out: only the wait on `acc_free` orders them."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "blackwell_5_persistent.py")
    with open(path) as f:
        source = f.read()
    wait = "tg.barrier_wait(acc_free.at[0])"
    assert source.count(wait) == 1
    broken = tmp_path / "blackwell_5_without_acc_free.py"
    broken.write_text(source.replace(wait, "pass"))
    m, n, k = 264, 520, 328
    kernel = load_example(str(broken)).build(m, n, k, num_clusters=1)
    with pytest.raises(tg.RaceError) as err:
        kernel(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert "tcgen05_mma" in message and "writes TMEM 'acc_tmem' of block (cluster_grid=0, cluster=1)" in message
    assert "the async_load_tmem at" in message
