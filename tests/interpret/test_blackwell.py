"""Blackwell kernels: per-warp work in core_map, tcgen05 MMAs with TMEM, 2-CTA pairs, persistent tiles."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs, relative_error

from .kernels import at_line, blackwell_matmul


def test_each_warp_of_core_map_runs_the_region_with_its_own_warp_index():
    @tg.kernel(out_shape=tg.ShapeDtype((4, 8, 16), tg.float32),
               scratch_shapes=[tg.SMEM((4, 8, 16), tg.float32), tg.Barrier(num_arrivals=4)])
    def per_warp(x, y, smem, loaded):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            warp = tg.axis_index("warp")
            tg.copy_gmem_to_smem(x.at[3 - warp], smem.at[warp], loaded)
        tg.barrier_wait(loaded)
        y[...] = smem[...]

    x = np.arange(4 * 8 * 16, dtype=np.float32).reshape(4, 8, 16)
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
