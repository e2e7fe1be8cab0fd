"""tg.matmul's designs: which the model picks per regime (decode, small M, large), that every design it ranks traces,
and that the design it runs (one kernel, or split-K's two passes) matches numpy in the interpreter."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import designs, hopper_matmul, splitk_reduce
from tilegemm.showcase import random_inputs, stored_operands


def picked(m, n, k, layouts=("mk", "nk"), **options):
    return dict(designs.choose(m, n, k, "float16", "h200", 132, *layouts, **options))


@pytest.mark.parametrize("m", [1, 16, 64])
@pytest.mark.parametrize("n,k", [(8192, 8192), (14336, 4096), (4096, 14336)])
def test_decode_pads_m_to_no_more_than_64_rows(m, n, k):
    # M of a few tokens against a weight: swap-AB with M as a narrow tile no wider than needed, or (M = 64) tiles
    # of 64 rows; never 128-row tiles, half of them padding
    params = picked(m, n, k)
    if params.get("swap_ab"):
        assert params["tile_n"] == min(t for t in designs.SWAP_TILE_N if t >= m)
    else:
        assert m == 64 and params["tile_m"] == 64


def test_a_weight_of_too_few_tiles_is_split_over_k():
    # 1024 rows are 16 tiles of 64: an eighth of the SMs would stream the weight; split, over half of them do
    params = picked(16, 1024, 14336)
    tiles = 1024 // params["tile_m"]
    assert params["split_k"] > 1 and tiles * params["split_k"] >= 132 // 2


def test_a_weight_of_half_the_sms_tiles_streams_without_splitting():
    # 4096 rows are 64 swapped tiles of 64: half the SMs at twice their share stream it about as fast as all
    # (measured, benchmarks/RESULTS.md run 28), so no reduction pass
    params = picked(16, 4096, 14336)
    assert params.get("split_k", 1) == 1 and params["swap_ab"]


def test_one_kernel_designs_exclude_split_k():
    assert picked(16, 4096, 14336, single_kernel=True).get("split_k", 1) == 1


@pytest.mark.parametrize("shape", [(2048, 2048, 2048), (8192, 8192, 8192), (3000, 5000, 2000)])
def test_large_problems_keep_the_classic_128_row_tiles(shape):
    params = picked(*shape, layouts=("mk", "kn"))
    assert params.get("tile_m", 128) == 128 and not params.get("swap_ab") and params.get("split_k", 1) == 1


@pytest.mark.parametrize("shape", [(1, 4096, 14336), (100, 8192, 1024), (64, 200, 136)])
def test_every_ranked_design_is_legal(shape):
    ranked = designs.predictions(*shape, "float16", "h200", 132, "mk", "nk")
    assert ranked and [p.predicted_s for _, p in ranked] == sorted(p.predicted_s for _, p in ranked)
    for params, _ in ranked:
        designs.build(*shape, "float16", tuple(sorted(params.items()))).trace_check()


@pytest.mark.parametrize("shape,layouts,params", [
    ((1, 200, 456), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True,
                                       split_k=4, stages=8)),
    ((40, 136, 264), ("km", "kn"), dict(tile_m=128, tile_n=64, epi_tile_n=64, schedule="cooperative", swap_ab=True,
                                        split_k=2, stages=4)),
    ((100, 264, 392), ("mk", "kn"), dict(tile_m=64, tile_n=128, schedule="pingpong", split_k=3, epi_tile_n=32)),
    ((3, 264, 136), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True)),
])
def test_a_design_runs_as_one_call_matching_numpy(shape, layouts, params):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16, seed=5)
    items = tuple(sorted(dict(params, num_sms=3, a_layout=layouts[0], b_layout=layouts[1]).items()))
    run = designs.build(m, n, k, "float16", items)
    assert isinstance(run, splitk_reduce.SplitK) == (params.get("split_k", 1) > 1)
    c = run(*stored_operands(a, b, *layouts), interpret=True)
    tt.assert_close(c, a.astype(np.float64) @ b.astype(np.float64), k=k)


@pytest.mark.parametrize("shape", [(1, 8, 8), (1, 4096, 1024), (16, 200, 136), (64, 520, 264), (130, 264, 200)])
def test_tg_matmul_runs_the_chosen_design_in_the_interpreter(shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.bfloat16, seed=2)
    w = np.ascontiguousarray(b.T)      # a linear layer's weight, stored [N, K]
    tt.assert_close(tg.matmul(a, w.T, interpret=True), a.astype(np.float64) @ b.astype(np.float64), k=k,
                    dtype=tg.bfloat16)


def test_split_choices_fill_the_sms_without_empty_slices():
    choices = designs.split_choices(tiles=64, k=14336, num_sms=132)
    assert choices[0] == 1 and max(choices) * 64 <= designs.MAX_SPLIT_UNITS * 132
    assert all(s in hopper_matmul.splits_that_fit(14336, 64, designs.MAX_SPLIT_K) for s in choices)
    assert designs.split_choices(tiles=200, k=14336, num_sms=132) == [1]
