"""tg.matmul's designs: which the model picks per regime (decode, small M, large), that every design it ranks traces,
and that the design it runs (one kernel, or split-K's two passes) matches numpy in the interpreter."""
import warnings

import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import designs, hopper_matmul, splitk_reduce
from tilegemm.showcase import random_inputs, stored_operands


def picked(m, n, k, layouts=("mk", "nk"), **options):
    return dict(designs.choose(m, n, k, "float16", "h200", 132, *layouts, **options))


# A decode design split over K in four slices that each tile's last slice sums, on a grid of three blocks
LAST_SLICE = dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True, split_k=4, stages=8,
                  split_reduction="last_slice", num_sms=3, a_layout="mk", b_layout="nk")


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


def test_a_weight_of_half_the_sms_tiles_is_split_where_each_sm_would_load_too_much():
    # 4096 rows are 64 swapped tiles: at M = 64 half the SMs streamed it 5% slower than all of them (run 114), and a
    # split summed by its last slices launches no second kernel
    params = picked(64, 4096, 14336)
    assert params["split_k"] == 2 and params["swap_ab"] and designs.last_slice(params)


@pytest.mark.parametrize("m", [1, 16])
def test_a_weight_of_half_the_sms_tiles_streams_unsplit_where_each_sm_loads_little(m):
    # at M = 16 the same 64 tiles ran as fast as their split (runs 114 and 121), which only adds its partials
    params = picked(m, 4096, 14336)
    assert params["swap_ab"] and params.get("split_k", 1) == 1


def test_one_kernel_designs_exclude_split_k():
    assert picked(16, 4096, 14336, split=1).get("split_k", 1) == 1


@pytest.mark.parametrize("shape", [(2048, 2048, 2048), (8192, 8192, 8192), (3000, 5000, 2000)])
def test_large_problems_keep_the_classic_128_row_tiles(shape):
    params = picked(*shape, layouts=("mk", "kn"))
    assert params.get("tile_m", 128) == 128 and not params.get("swap_ab") and params.get("split_k", 1) == 1


def test_a_weight_stored_k_major_also_gets_224_wide_64_row_tiles_and_the_fuller_round_wins_a_tie():
    # at 128 x 14336 x 4096 the model predicts 112 128x128 tiles and 128 64x224 tiles alike (DRAM-bound); more SMs
    # streaming the weight measured 1.03x cuBLAS against 0.92-0.97x (benchmarks/RESULTS.md run 52)
    params = picked(128, 14336, 4096, layouts=("mk", "nk"))
    assert (params["tile_m"], params["tile_n"], params["schedule"], params["epi_tile_n"]) == (64, 224, "pingpong", 32)
    ranked = designs.predictions(128, 14336, 4096, "float16", "h200", 132, "mk", "nk")
    assert ranked[0][1].predicted_s == next(b for p, b in ranked if p.get("tile_m", 128) == 128).predicted_s
    n_major = designs.predictions(128, 14336, 4096, "float16", "h200", 132, "mk", "kn")
    assert not any(p["tile_n"] == 224 for p, _ in n_major)   # 64-column TMA boxes of an N-major B


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
def test_ptxas_keeps_the_wgmmas_of_every_64_row_width_in_flight(dtype):
    # bf16's 192- and 224-wide tiles were serialized (advisory C7514) while their epilogue rounded to bf16 one
    # element at a time (0.82x cuBLAS against f16's 0.96x at 128 x 14336 x 4096, benchmarks/RESULTS.md run 53)
    for tile_n in sorted(set(designs.ROWS_64_TILE_N + designs.ROWS_64_K_MAJOR_TILE_N)):
        kernel = hopper_matmul.build(128, 14336, 4096, dtype=dtype, tile_m=64, tile_n=tile_n, schedule="pingpong",
                                     epi_tile_n=designs._store_slice(tile_n), stages=4, a_layout="mk", b_layout="nk")
        with warnings.catch_warnings():
            warnings.simplefilter("error", tg.PerformanceWarning)
            compiled = kernel.lower(*operand_specs(128, 14336, 4096, dtype, "mk", "nk"), arch="sm_90a").compile()
        assert compiled.meta["wgmma_serialized"] is False, tile_n
    ranked = designs.predictions(128, 14336, 4096, tg.lang.dtypes.name(dtype), "h200", 132, "mk", "nk")
    assert {p["tile_n"] for p, _ in ranked if p.get("tile_m") == 64 and not p.get("swap_ab")} == {128, 192, 224, 256}


def test_a_64_row_design_keeps_its_deepest_ring_split_or_not():
    # a split's last slices store C in its own dtype, as the whole-K design does: no f32 epilogue takes stages
    ranked = designs.predictions(128, 4096, 14336, "float16", "h200", 132, "mk", "nk")
    stages = {p.get("split_k", 1): p["stages"] for p, _ in ranked
              if (p.get("tile_m"), p["tile_n"], p.get("swap_ab", False)) == (64, 128, False)}
    assert stages[1] == stages[2] == stages[3] == hopper_matmul.deepest_stages(
        tg.float16, tile_m=64, tile_n=128, a_layout="mk", b_layout="nk") == 8
    assert picked(128, 8192, 8192, layouts=("mk", "nk"))["stages"] == stages[1]
    assert all(designs.last_slice(p) for p, _ in ranked if p.get("split_k", 1) > 1)


def test_classic_tiles_streaming_a_weight_at_decode_sized_m_keep_their_deepest_ring():
    # an N-major B has no 224-wide 64-row tiles, so 128x128 tiles stream the (4096, 14336) weight: with 6 stages
    # (0.97x cuBLAS in run 52, 0.92x with the 4 that suit compute-bound problems)
    params = dict(designs.choose(128, 14336, 4096, "bfloat16", "h200", 132, "mk", "kn"))
    assert (params.get("tile_m", 128), params["tile_n"], params["stages"]) == (128, 128, hopper_matmul.deepest_stages(
        tg.bfloat16, tile_n=128, schedule=params["schedule"], a_layout="mk", b_layout="kn"))
    elsewhere = picked(2048, 2048, 2048, layouts=("mk", "kn"))   # a compute-bound problem: the flagship's ring
    assert (elsewhere["tile_n"], elsewhere.get("stages", 4)) == (128, 4)


def classic_rings(m, n, k, dtype):
    """{(tile_n, schedule): (stages, store slice width)} of the plain classic designs ranked for this problem."""
    return {(p["tile_n"], p["schedule"]): (p.get("stages", 4), p.get("epi_tile_n", 64))
            for p, _ in designs.predictions(m, n, k, dtype, "h200", 132, "mk", "nk")
            if designs.family(p) == "classic 128-row" and "cluster_m" not in p}


@pytest.mark.parametrize("dtype", ["float16", "float8_e4m3fn"])
def test_a_tile_of_c_wider_than_128_takes_a_fifth_stage_where_store_slices_of_32_columns_make_room(dtype):
    ring = classic_rings(8192, 8192, 8192, dtype)
    assert ring[(192, "pingpong")] == ring[(192, "cooperative")] == (5, 32)   # 64-column slices leave room for 4
    assert ring[(256, "cooperative")] == (4, 64)                              # no slice width makes room for 5
    assert ring[(160, "pingpong")] == (5, 64)
    assert classic_rings(2048, 2048, 2048, dtype)[(128, "cooperative")] == (4, 64)   # five ran slower (run 148)


def test_tiles_160_wide_join_the_classic_ones_only_where_b_is_k_major_and_every_sm_has_a_tile():
    def widths(m, n, b_layout):
        return {p["tile_n"] for p, _ in designs.predictions(m, n, 4096, "float16", "h200", 132, "mk", b_layout)
                if designs.family(p) == "classic 128-row"}
    assert 160 in widths(4096, 7168, "nk")
    assert 160 not in widths(4096, 7168, "kn")     # N-major B: its 64-column TMA boxes
    assert 160 not in widths(128, 7168, "nk")      # too few tiles: 128 and 64-row tiles fill the SMs


def test_round_waste_counts_the_tiles_padding_and_the_sms_a_last_round_leaves_idle():
    assert designs.round_waste(256, 256, 128, 128, num_sms=4) == 0
    assert designs.round_waste(256, 256, 128, 128, num_sms=3) == pytest.approx(1 / 3)   # 4 tiles: 2 rounds of 3
    assert designs.round_waste(200, 256, 128, 128, num_sms=4) == pytest.approx(1 - 200 / 256)


def test_a_ragged_problem_whose_tiles_leave_a_round_idle_takes_swapped_tiles_that_fill_it():
    # 240 128x192 tiles of C leave 9% of two rounds on 132 SMs idle; 128 swapped 256x160 tiles (4 along N = 1000,
    # 32 along M = 5000) leave 3% of one: measured 0.60x -> 0.85x cuBLAS (benchmarks/RESULTS.md runs 44-45);
    # 132 256x152 ones leave none
    params = picked(5000, 1000, 3000, layouts=("mk", "kn"))
    assert designs.filling(params) and (params["tile_m"], params["tile_n"], params["schedule"]) == (
        256, 152, "cooperative")   # 4 x 33 tiles of C^T: one per SM, as cuBLAS's 256x152 ones (RESULTS.md run 122)
    assert designs.round_waste(1000, 5000, 256, 152, 132) < designs.round_waste(1000, 5000, 256, 160, 132) \
        < designs.round_waste(5000, 1000, 128, 192, 132) - 0.05


@pytest.mark.parametrize("tile_m,tile_n,epi_tile_n", [(256, 152, 32), (256, 136, 32), (256, 176, 16), (256, 184, 8),
                                                    (256, 128, 64), (128, 152, 64)])
def test_a_swapped_tile_stores_the_widest_slices_that_cost_no_stage_of_its_ring(tile_m, tile_n, epi_tile_n):
    # 152 = 4 x 32 + 24: five store slices, not 19 of 8 (6% slower for 256x160 at 5000 x 1000 x 3000, run 140);
    # 184 keeps 8-column slices: 16-column ones would take its fourth stage
    design = dict(tile_m=tile_m, tile_n=tile_n, schedule="cooperative", swap_ab=True)
    assert designs._swapped_store_slice(design, tg.float16, "mk", "kn") == epi_tile_n

    def ring(w):
        return hopper_matmul.deepest_stages(tg.float16, epi_tile_n=w, most=4, **design)
    assert ring(epi_tile_n) == ring(8) and all(ring(w) < ring(8) for w in designs.STORE_SLICES if w > epi_tile_n)


def test_filling_widths_fit_a_consumers_registers_and_lower():
    assert designs.FILL_TILE_N == tuple(range(128, 193, 8))   # 128 rows x 192 f32 = 192 registers a thread


def test_a_filling_design_is_ranked_behind_a_classic_one_the_model_predicts_alike():
    # at 4096^3 the model predicts swapped 256x128 tiles as fast as 128x256 tiles of C: the classic tiles, measured
    # on the H200 since run 7, are kept
    ranked = designs.predictions(4096, 4096, 4096, "float16", "h200", 132, "mk", "kn")
    (params, best), = ranked[:1]
    fill, fill_budget = next((p, b) for p, b in ranked if designs.filling(p))
    assert fill_budget.predicted_s == pytest.approx(best.predicted_s, rel=1e-4) and not designs.filling(params)
    assert designs.rank_s(fill, fill_budget) == pytest.approx(fill_budget.predicted_s * (1 + designs.FILL_MARGIN))


@pytest.mark.parametrize("shape", [(1, 4096, 14336), (100, 8192, 1024), (64, 200, 136)])
def test_every_ranked_design_is_legal(shape):
    ranked = designs.predictions(*shape, "float16", "h200", 132, "mk", "nk")
    assert ranked and [designs.rank_s(*r) for r in ranked] == sorted(designs.rank_s(*r) for r in ranked)
    for params, _ in ranked:
        designs.build(*shape, "float16", tuple(sorted(params.items()))).trace_check()


@pytest.mark.parametrize("shape,layouts,params", [
    ((1, 200, 456), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True,
                                       split_k=4, stages=8)),
    ((40, 136, 264), ("km", "kn"), dict(tile_m=128, tile_n=64, epi_tile_n=64, schedule="cooperative", swap_ab=True,
                                        split_k=2, stages=4)),
    ((100, 264, 392), ("mk", "kn"), dict(tile_m=64, tile_n=128, schedule="pingpong", split_k=3, epi_tile_n=32)),
    ((3, 264, 136), ("mk", "nk"), dict(tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", swap_ab=True)),
    ((300, 264, 136), ("mk", "kn"), dict(tile_m=256, tile_n=160, epi_tile_n=32, schedule="cooperative",
                                         swap_ab=True, stages=2)),
    ((200, 264, 136), ("mk", "nk"), dict(tile_m=256, tile_n=176, epi_tile_n=16, schedule="cooperative",
                                         swap_ab=True, stages=3)),
    ((300, 264, 136), ("mk", "nk"), dict(tile_m=256, tile_n=128, schedule="cooperative", stages=2)),
    ((100, 456, 136), ("mk", "nk"), dict(tile_m=64, tile_n=224, schedule="pingpong", epi_tile_n=32, stages=3)),
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


def test_families_name_the_design():
    assert designs.family(dict(swap_ab=True, split_k=2, tile_n=16)) == "swap-AB + split-K"
    assert designs.family(dict(tile_m=64, tile_n=128)) == "64-row"
    assert designs.family(dict(tile_n=192)) == "classic 128-row"
    assert designs.family(dict(tile_m=256, tile_n=160, swap_ab=True)) == "filling, swapped 256-row"
    assert designs.family(dict(tile_m=128, tile_n=160, swap_ab=True, cluster_m=4)) == "filling, swapped 128-row"
    assert designs.family(dict(tile_m=64, tile_n=128, split_k=3)) == "64-row + split-K"


def test_split_choices_fill_the_sms_without_empty_slices():
    choices = designs.split_choices(tiles=64, k=14336, num_sms=132, tile_k=64)
    assert choices[0] == 1 and max(choices) * 64 <= designs.MAX_SPLIT_UNITS * 132
    assert all(s in hopper_matmul.splits_that_fit(14336, 64, designs.MAX_SPLIT_K) for s in choices)
    assert designs.split_choices(tiles=200, k=14336, num_sms=132, tile_k=64) == [1]


def test_every_split_design_the_model_ranks_for_fp8_builds():
    # fp8's K steps are 128 wide: 2048 is 16 of them, and five slices of four would leave the last one empty (its
    # 16-bit steps, 64 wide, split five ways)
    ranked = designs.predictions(64, 1016, 2048, "float8_e4m3fn", "h200", 132, "mk", "nk")
    splits = {params.get("split_k", 1) for params, _ in ranked}
    assert 4 in splits and 5 not in splits
    for params, _ in ranked:
        if params.get("split_k", 1) > 1:
            designs.build(64, 1016, 2048, "float8_e4m3fn", tuple(sorted(params.items())))


def test_a_batched_filling_design_matches_numpy_in_the_interpreter():
    # tg.matmul picks the filling design for a batch of ragged problems too (5000x1000x3000, batch 2)
    assert designs.filling(dict(designs.choose(5000, 1000, 3000, "float16", "h200", 132, "mk", "kn", batch=2)))
    m, n, k = 300, 264, 136
    items = dict(tile_m=256, tile_n=160, epi_tile_n=32, schedule="cooperative", swap_ab=True, stages=2, batch=2,
                 num_sms=3, a_layout="mk", b_layout="kn")
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((2, m, k), (2, k, n)))
    c = designs.build(m, n, k, "float16", tuple(sorted(items.items())))(a, b, interpret=True)
    tt.assert_close(c, a.astype(np.float64) @ b.astype(np.float64), k=k)


def test_clusters_take_their_tiles_a_cluster_at_a_time_and_no_more_at_once_than_the_gpu_holds():
    # 777 x 3000 in 128x192 tiles is 7 x 16 tiles: clusters of two make 4 x 16 = 64 units of work, one round of
    # the 66 the H200 holds; clusters of four make 2 x 16 = 32 units, two rounds of the 30 it holds (measured
    # 0.45-0.51x cuBLAS against 0.73x for the plain tiles: benchmarks/RESULTS.md run 51)
    plain = dict(tile_n=192, schedule="pingpong", stages=4, a_layout="mk", b_layout="kn")
    tail = {c: designs.design_prediction(777, 3000, 1400, tg.float16, "NVIDIA H200",
                                         dict(plain, cluster_m=c, num_sms=sms)).gemm.tail_efficiency
            for c, sms in ((1, 132), (2, 132), (4, 120))}
    assert tail[1] == tail[2] == pytest.approx(112 / 132)
    assert tail[4] == pytest.approx(tail[1] / 2)


def test_mis_aligned_rows_that_bound_a_design_by_l2_run_it_in_clusters_sharing_them():
    # 3000 x 5000 x 2000: B's 10000-byte rows start mid-line; blocks in pairs fetch each B tile once by multicast
    # (measured 1.045x cuBLAS against 0.90x plain, benchmarks/RESULTS.md run 64). At 3072 x 5120 x 2048 they do not.
    pick = picked(3000, 5000, 2000, layouts=("mk", "kn"))
    assert (pick["tile_n"], pick["schedule"], pick["cluster_m"]) == (192, "pingpong", 2)
    plain = designs.in_clusters(pick, 1, "h200", 132)
    assert designs.design_prediction(3000, 5000, 2000, tg.float16, "h200", plain).gemm.bound == "L2"
    assert "cluster_m" not in picked(3072, 5120, 2048, layouts=("mk", "kn"))


def test_of_cluster_sizes_predicted_alike_the_larger_is_taken():
    # 777 x 3000 x 1400: swapped 128x160 tiles in fours and in twos are predicted within CLUSTER_TIE (fours
    # measured 1.26x their plain twin, twos 1.16x: run 60)
    pick = picked(777, 3000, 1400, layouts=("mk", "kn"))
    assert designs.swapped_rows(pick) and (pick["tile_m"], pick["tile_n"], pick["cluster_m"]) == (128, 160, 4)
    assert pick["num_sms"] == 120                                  # the 30 clusters of four the H200 holds


def test_a_cluster_design_must_beat_its_plain_twin_by_the_margin():
    # 768 x 3000 x 1408: only the swapped MMA's A (B, not shared) is mis-aligned; clusters of four are predicted
    # under 1% faster, and measured 5% slower (run 64)
    ranked = designs.predictions(768, 3000, 1408, "float16", "h200", 132, "mk", "kn")
    plain = {tuple(sorted(designs.in_clusters(p, 1, "h200", 132).items())): b for p, b in ranked if "cluster_m" not in p}
    for params, twin in ranked:
        if params.get("cluster_m", 1) > 1:
            base = plain[tuple(sorted(designs.in_clusters(params, 1, "h200", 132).items()))]
            assert twin.predicted_s * (1 + designs.CLUSTER_MARGIN) <= base.predicted_s
    assert not any(p.get("cluster_m", 1) > 1 and designs.swapped_rows(p) and p["tile_n"] == 160 for p, _ in ranked)


@pytest.mark.parametrize("shape", [(3000, 5000, 2000), (777, 3000, 1400), (1500, 2504, 1000)])
def test_a_designs_twin_in_clusters_is_never_ranked_ahead_of_its_floor(shape):
    # the floor lets predictions() skip tracing the twins of designs that cannot win; it must bound them from below
    ranked = designs.predictions(*shape, "float16", "h200", 132, "mk", "kn")
    for params, prediction in ranked:
        if "cluster_m" not in params:
            for twin in designs._clustered(*shape, tg.float16, "h200", params, prediction):
                assert designs.rank_s(*twin) >= designs._twin_floor_s(params, prediction) * (1 - 1e-9)
    # and skips some: fewer twins are ranked than there are L2-bound designs that could run in clusters
    twins = [p for p, _ in ranked if "cluster_m" in p]
    assert 0 < len(twins) < sum(1 for p, b in ranked if b.gemm.bound == "L2" and designs.clusterable(p))


def test_wide_tiles_in_one_round_of_clusters_win_over_narrow_ones_in_two_at_1500x2504x1000():
    # 128x256 tiles in clusters of four ran 6-9% faster than 128x128 ones in fours on the H200 (RESULTS.md runs 126,
    # 144, 156, 208) and 15-18% on an H100 (runs 209-210): the narrow tiles' blocks in clusters wait for each
    # tile's first stage
    pick = dict(designs.choose(1500, 2504, 1000, "float16", "h200", 132, "mk", "kn"))
    shape = (pick.get("tile_m", 128), pick["tile_n"], pick["schedule"], pick["cluster_m"])
    assert shape == (128, 256, "cooperative", 4)


@pytest.mark.parametrize("m", [1, 64, 128, 256])
def test_decode_and_64_row_designs_never_run_in_clusters(m):
    # 64-row and decode tiles in clusters ran slower than plain at every decode cell tried (run 60)
    ranked = designs.predictions(m, 8192, 8192, "float16", "h200", 132, "mk", "nk")
    assert not any(p.get("cluster_m", 1) > 1 and not designs.clusterable(p) for p, _ in ranked)
    assert not designs.clusterable(dict(tile_m=64, tile_n=128, schedule="pingpong"))
    assert not designs.clusterable(dict(tile_m=128, tile_n=16, schedule="cooperative", swap_ab=True))


def test_family_firsts_keeps_the_fastest_designs_of_each_family_in_ranked_order():
    ranked = [(dict(tile_n=192, schedule="pingpong"), "a"), (dict(tile_n=256, schedule="cooperative"), "b"),
              (dict(tile_m=64, tile_n=128, schedule="pingpong"), "c"), (dict(tile_n=128, schedule="cooperative"), "d")]
    assert [b for _, b in designs.family_firsts(ranked)] == ["a", "c"]
    assert [b for _, b in designs.family_firsts(ranked, per_family=2)] == ["a", "b", "c"]


def launch_triggers(m, n, k, layouts=("mk", "kn")):
    """The griddepcontrol.launch_dependents lines of the kernel tg.matmul chooses, and whether it was asked to."""
    params = designs.choose(m, n, k, "float16", "h200", 132, *layouts)
    run = designs.build(m, n, k, "float16", params)
    source = run.kernel.lower(*run.specs, *getattr(run, "carried", ())).source
    return source.count("cute.arch.griddepcontrol_launch_dependents()"), dict(params).get("trigger_dependents", False)


@pytest.mark.parametrize("shape", [(1500, 2504, 1000), (777, 3000, 1400), (2048, 2048, 2048), (8192, 8192, 8192)])
def test_a_design_the_model_finds_sm_bound_lets_the_next_call_launch_once_its_loads_are_issued(shape):
    assert designs.predictions(*shape, "float16", "h200", 132)[0][1].gemm.bound == designs.SM_BOUND
    assert launch_triggers(*shape) == (1, True)


@pytest.mark.parametrize("shape", [(1, 14336, 4096), (128, 8192, 8192), (128, 14336, 4096), (64, 4096, 14336)])
def test_a_memory_bound_design_leaves_the_next_call_to_launch_as_its_blocks_exit(shape):
    assert designs.predictions(*shape, "float16", "h200", 132)[0][1].gemm.bound != designs.SM_BOUND
    assert launch_triggers(*shape) == (0, False)


def test_a_designs_description_names_its_block_scales_and_l2_promotion_where_it_has_them():
    plain = dict(tile_n=128, schedule="cooperative", stages=6)
    assert designs.describe(dict(plain, pad_scales=True)) == "128x128 cooperative, 6 stages, block scales padded first"
    assert designs.describe(dict(plain, gmem_scales=True)).endswith(", block scales read from GMEM")
    assert designs.describe(dict(plain, l2_promotion=256)).endswith(", loads promoted to 256 B in L2")


def test_a_designs_description_names_its_store_slices_where_they_are_not_the_builders_default():
    plain = dict(tile_n=192, schedule="pingpong", stages=4)
    assert designs.describe(plain) == "128x192 pingpong, 4 stages"
    assert designs.describe(dict(plain, epi_tile_n=64)) == "128x192 pingpong, 4 stages"
    assert designs.describe(dict(plain, epi_tile_n=32, cluster_m=2)) == ("128x192 pingpong, 4 stages, 32-column "
                                                                         "stores, clusters of 2")


def test_few_tiles_counts_a_partial_tile_as_a_whole_one_and_a_tile_per_sm_as_enough():
    assert designs.few_tiles(128, 256, 2)              # one 128x256 tile, two SMs
    assert not designs.few_tiles(256, 512, 4)          # four tiles, four SMs: every SM has one
    assert not designs.few_tiles(129, 257, 4)          # 2 x 2 tiles, the last ones one row and one column in


def test_64_row_tiles_are_candidates_up_to_max_64_row_m_where_128_row_tiles_leave_sms_idle():
    def rows(m):
        return {d.get("tile_m", 128) for d in designs.base_designs(m, 4096, tg.float16, 132, "mk", "nk")}
    assert designs.few_tiles(designs.MAX_64_ROW_M + 1, 4096, 132)   # tiles still few: M alone excludes them
    assert 64 in rows(designs.MAX_64_ROW_M) and 64 not in rows(designs.MAX_64_ROW_M + 1)


def test_two_pass_designs_are_those_a_second_kernel_completes():
    assert not designs.two_pass(dict(tile_n=128))
    assert designs.two_pass(dict(tile_n=128, split_k=2))                                   # a reduction pass
    assert not designs.two_pass(dict(tile_n=128, split_k=2, split_reduction="last_slice"))  # summed in the kernel
    assert designs.two_pass(dict(tile_n=128, stream_k=2))                                  # the tail's pass


def test_a_fused_epilogue_runs_on_the_sum_of_a_split_on_c_and_on_c_transposed_only_where_it_can():
    swapped = dict(tile_m=64, tile_n=16, swap_ab=True)
    assert not designs.fusable(swapped) and designs.fusable(swapped, transposable=True)
    assert designs.fusable(dict(swapped, split_k=2))               # the slices' sum is C's, not C^T's
    assert designs.fusable(dict(tile_n=128)) and not designs.fusable(dict(tile_n=128, stream_k=2), transposable=True)


def test_a_designs_rounds_are_its_work_units_per_sm_a_partial_round_counting_whole():
    # the tie-break of designs predicted alike: fewer rounds first
    params = dict(tile_n=128, schedule="cooperative", num_sms=132, a_layout="mk", b_layout="kn")
    prediction = designs.design_prediction(1234, 4104, 2048, tg.float16, "h200", params)   # 330 tiles
    assert designs._rounds(prediction, 132) == 3 and designs._rounds(prediction, 330) == 1


def test_a_design_whose_cluster_twins_the_builder_refuses_stays_plain(monkeypatch):
    # 3000 x 5000 x 2000 runs in clusters of two (test_mis_aligned_rows_that_bound_a_design_by_l2_run_it_in_...);
    # were no cluster kernel legal, the plain design would run
    pick = designs.in_clusters(picked(3000, 5000, 2000, layouts=("mk", "kn")), 1, "h200", 132)
    prediction = designs.design_prediction(3000, 5000, 2000, tg.float16, "h200", pick)
    unclustered = designs.design_prediction
    monkeypatch.setattr(designs, "design_prediction", lambda *args: None if designs.cluster_size(args[-1]) > 1
                        else unclustered(*args))
    assert designs._clustered(3000, 5000, 2000, tg.float16, "h200", pick, prediction) == []


def test_a_design_summed_by_its_last_slices_traces_its_kernel_with_the_workspace_and_counters(monkeypatch):
    run = designs.build(1, 200, 456, "float16", tuple(sorted(LAST_SLICE.items())))
    traced = []
    monkeypatch.setattr(run.kernel, "trace", lambda *specs: traced.append(specs))
    run.trace_check()
    assert traced == [(*run.specs, *run.carried)] and len(run.carried) == 2   # the f32 partials, the counters


def test_a_design_summed_by_its_last_slices_writes_into_out_in_the_interpreter():
    m, n, k = 1, 200, 456
    run = designs.build(m, n, k, "float16", tuple(sorted(LAST_SLICE.items())))
    a, b = random_inputs(m, n, k, tg.float16, seed=7)
    out = np.full((m, n), np.nan, np.float16)
    c = run(*stored_operands(a, b, "mk", "nk"), out=out, interpret=True)
    tt.assert_close(out, a.astype(np.float64) @ b.astype(np.float64), k=k)
    assert c is out or np.shares_memory(c, out)
