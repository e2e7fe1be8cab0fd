"""Hopper kernels: TMA + wgmma pipelines, warp specialization, multicast, and the races each step prevents."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs, relative_error, stored_operands

from .kernels import at_line, pipelined_matmul, warp_specialized_matmul


@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (128, 192, 320), (200, 136, 72), (1, 8, 8)])
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_a_tma_wgmma_pipeline_matches_numpy(m, n, k, dtype):
    a, b = random_inputs(m, n, k, dtype)
    c = pipelined_matmul(m, n, k, dtype=dtype, tile_n=64 if n < 128 else 128, epilogue_n=64)(a, b, interpret=True)
    assert c.dtype == dtype and relative_error(c, a, b) < 1e-2


def test_wgmma_accumulates_in_f32():
    m, n, k = 64, 64, 2064  # f16 stops counting at 2048 (2048 + 1 rounds back to 2048); f32 does not
    ones = np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    c = pipelined_matmul(m, n, k, tile_k=16)(*ones, interpret=True)
    assert (c == k).all()


def test_an_f16_accumulator_is_rounded_after_every_instruction():
    """Each m64nNk16 instruction adds its 16 products to the f16 accumulator: at 2048, where f16 values are 2
    apart, an instruction adding 1 rounds back to 2048, whereas rounding once per 64-deep wgmma would add 4."""
    f16 = tg.float16

    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), f16),
               scratch_shapes=[tg.SMEM((64, 64), f16, transforms=tg.mma_transforms(64, f16)),
                               tg.SMEM((64, 64), f16, transforms=tg.mma_transforms(64, f16)),
                               tg.Barrier(num_arrivals=2), tg.ACC((64, 64), f16)])
    def matmul(a, b, c, a_smem, b_smem, loaded, acc):
        acc[...] = tg.full((64, 64), 2048.0, f16)
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c[...] = acc[...]

    ones, sixteenths = np.ones((64, 64), np.float16), np.full((64, 64), 1 / 16, np.float16)
    assert (matmul(ones, sixteenths, interpret=True) == 2048).all()


def test_reading_the_accumulator_before_wgmma_wait_is_a_race():
    m, n, k = 64, 64, 128
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, retire=False)(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('read acc')}: load ")
    assert f"the wgmma at {at_line('wgmma')}" in message and "tg.wgmma_wait" in message


def test_refilling_a_stage_an_unretired_wgmma_reads_is_a_race():
    m, n, k = 64, 64, 192  # three steps through two stages
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, retire=False)(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('copy a')}: copy_gmem_to_smem ")
    assert f"the wgmma at {at_line('wgmma')}" in message and "may still be in flight" in message


def test_a_missing_barrier_wait_before_wgmma_is_a_race():
    m, n, k = 64, 64, 64
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, wait=None)(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('wgmma')}: wgmma ")
    assert f"the copy_gmem_to_smem at {at_line('copy b')}" in message


def test_a_tma_store_without_commit_smem_after_the_stores_is_a_race():
    m, n, k = 64, 64, 64
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, fence=False)(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('tma store')}: copy_smem_to_gmem ")
    assert f"the store at {at_line('epilogue store')}" in message and "tg.commit_smem()" in message


def test_overwriting_smem_a_tma_store_may_still_read_is_a_race():
    m, n, k = 64, 128, 64
    kernel = pipelined_matmul(m, n, k, tile_n=128, epilogue_n=64, epilogue_wait=False)
    with pytest.raises(tg.RaceError) as err:
        kernel(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('epilogue store')}: store ")
    assert f"the copy_smem_to_gmem at {at_line('tma store')}" in message and "wait_smem_to_gmem" in message


@pytest.mark.parametrize("m, n, k", [(256, 256, 256), (200, 136, 200)])
def test_warp_specialized_producer_and_two_consumers_match_numpy(m, n, k):
    a, b = random_inputs(m, n, k, tg.float16)
    assert relative_error(warp_specialized_matmul(m, n, k)(a, b, interpret=True), a, b) < 1e-2


def test_a_producer_refilling_a_stage_without_waiting_for_its_consumers_is_a_race():
    m, n, k = 128, 256, 512  # eight steps through four stages
    with pytest.raises(tg.RaceError) as err:
        warp_specialized_matmul(m, n, k, release=False)(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('ws a')}: copy_gmem_to_smem (block (m=0, n=0) thread wg=2) writes SMEM")


@pytest.mark.parametrize("m, n, k", [(256, 512, 256), (200, 264, 136)])
def test_multicast_shares_the_a_tile_across_the_cluster(m, n, k):
    a, b = random_inputs(m, n, k, tg.float16)
    assert relative_error(warp_specialized_matmul(m, n, k, multicast=True)(a, b, interpret=True), a, b) < 1e-2


def test_multicast_refills_must_wait_for_the_consumers_of_every_block_of_the_cluster():
    m, n, k = 128, 512, 512
    kernel = warp_specialized_matmul(m, n, k, multicast=True, cluster_release=False)
    with pytest.raises(tg.RaceError) as err:
        kernel(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)  # block 0 refills block 1's SMEM knowing only that its own consumers are done
    assert message.startswith(f"{at_line('ws a')}: copy_gmem_to_smem (block (m=0, n=0, cn=0) thread wg=2) "
                              "writes SMEM 'a_smem' of block (m=0, n=0, cn=1)")


@pytest.mark.parametrize("a_layout,b_layout", [("mk", "nk"), ("km", "kn"), ("km", "nk")])
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_operands_stored_transposed_are_multiplied_through_transposed_views(a_layout, b_layout, dtype):
    m, n, k = 200, 136, 200          # ragged in every dimension
    a, b = random_inputs(m, n, k, dtype)
    kernel = pipelined_matmul(m, n, k, dtype=dtype, tile_n=128, epilogue_n=64, a_layout=a_layout, b_layout=b_layout)
    c = kernel(*stored_operands(a, b, a_layout, b_layout), interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_a_transposed_view_is_the_same_memory_for_the_race_checks():
    m, n, k = 64, 64, 192  # three steps through two stages; wgmma reads both stages through transposes
    a, b = random_inputs(m, n, k, tg.float16)
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, retire=False, a_layout="km", b_layout="nk")(*stored_operands(a, b, "km", "nk"),
                                                                              interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('copy a')}: copy_gmem_to_smem ")
    assert f"the wgmma at {at_line('wgmma')}" in message and "may still be in flight" in message
