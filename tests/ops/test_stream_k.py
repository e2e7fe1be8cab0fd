"""The flagship's stream-K tail: whole rounds of whole tiles, then the last round's tiles split into K slices over
every block, their f32 partials summed in slice order into C by a second pass updating C in place. Against numpy in
the interpreter (ragged shapes, both schedules, shuffled schedules), refused where it cannot run, compiled for
sm_90a, and budgeted by the model."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import designs, hopper_matmul, splitk_reduce
from tilegemm.showcase import random_inputs, relative_error, stored_operands


def stream_k_design(m, n, k, num_sms, layouts=("mk", "kn"), dtype="float16", **params):
    """designs.build's callable for a classic tile with a stream-K tail on a grid of `num_sms` blocks."""
    items = dict(dict(tile_n=128, schedule="cooperative"), **params, num_sms=num_sms, a_layout=layouts[0],
                 b_layout=layouts[1])
    return designs.build(m, n, k, dtype, tuple(sorted(items.items())))


@pytest.mark.parametrize("shape,num_sms,split,schedule,layouts", [
    ((200, 296, 256), 4, 2, "cooperative", ("mk", "kn")),     # 6 tiles: one round of 4, a tail of 2 split in 2
    ((200, 296, 384), 4, 3, "pingpong", ("km", "nk")),        # ... split in 3, each consumer taking whole units
    ((136, 264, 200), 5, 2, "cooperative", ("mk", "nk")),     # 6 tiles on 5 blocks; K = 200 ends mid-step
    ((392, 136, 264), 3, 2, "pingpong", ("km", "kn")),        # 8 tiles: two rounds of 3, then 2 split
], ids=["coop-split2", "pingpong-split3", "ragged-k", "two-rounds"])
@pytest.mark.parametrize("seed", [None, 1])
def test_a_stream_k_tail_matches_numpy(shape, num_sms, split, schedule, layouts, seed):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16, seed=0)
    run = stream_k_design(m, n, k, num_sms, layouts, schedule=schedule, stream_k=split)
    assert isinstance(run, splitk_reduce.StreamK)
    c = run(*stored_operands(a, b, *layouts), interpret=True, seed=seed)
    assert c.shape == (m, n) and relative_error(c, a, b) < 1e-2


def test_the_gemm_leaves_the_tail_tiles_to_the_second_pass_which_writes_only_those():
    m, n, k = 200, 296, 256
    a, b = random_inputs(m, n, k, tg.float16, seed=0)
    run = stream_k_design(m, n, k, 4, stream_k=2)
    c, workspace = run.gemm(a, b, interpret=True)
    tail = hopper_matmul.StreamKTail.of(6, 4, k, 64, 2)
    assert tail == (1, 2, 2, 2) and workspace.shape == tail.workspace_shape(128, 128) == (512, 128)
    unwritten = np.isnan(c.astype(np.float32))
    assert unwritten.sum() == 128 * 40 + 72 * 40, "the last two tiles in snake order (the 40 columns past 256)"
    done = run.reduce(workspace, c, interpret=True)
    assert np.array_equal(done[~unwritten], c[~unwritten]), "the whole tiles stay as the GEMM wrote them"
    assert relative_error(done, a, b) < 1e-2


def test_the_tail_is_summed_in_slice_order_whatever_order_the_blocks_ran_in():
    m, n, k = 200, 296, 384
    a, b = random_inputs(m, n, k, tg.float16, seed=2)
    outs = [stream_k_design(m, n, k, 4, stream_k=3)(a, b, interpret=True, seed=seed) for seed in (None, 3, 4)]
    assert all(np.array_equal(outs[0], out) for out in outs[1:])


def test_out_receives_the_whole_tiles_and_the_tail():
    m, n, k = 200, 296, 256
    a, b = random_inputs(m, n, k, tg.float16, seed=0)
    out = np.full((m, n), np.nan, np.float16)
    assert stream_k_design(m, n, k, 4, stream_k=2)(a, b, out=out, interpret=True) is out
    assert relative_error(out, a, b) < 1e-2


@pytest.mark.parametrize("params,message", [
    (dict(cluster_m=2), r"stream_k=2 splits C's own tiles of one GEMM among single blocks: build it without "
                        r"clusters, swap_ab, split_k, batch"),
    (dict(split_k=2), r"got clusters of 1, swap_ab=False, split_k=2"),
    (dict(cluster_n=2), r"build it without clusters"),
    (dict(num_sms=3), r"stream_k=2: the 6 tiles make whole rounds of the 3-block grid, which leave no SM idle"),
])
def test_stream_k_is_refused_where_it_cannot_run(params, message):
    with pytest.raises(ValueError, match=message):
        hopper_matmul.build(200, 296, 256, tile_n=128, schedule="cooperative", stream_k=2,
                            **dict(dict(num_sms=4), **params))


def test_a_slice_without_k_steps_is_refused():
    with pytest.raises(ValueError, match=r"stream_k=3 cuts K=256 into slices of which the last would be empty"):
        hopper_matmul.build(200, 296, 256, tile_n=128, schedule="cooperative", stream_k=3, num_sms=4)


def test_both_kernels_compile_for_sm_90a():
    m, n, k = 1234, 4104, 2048
    run = stream_k_design(m, n, k, 132, stream_k=2)
    run.compile("sm_90a")
    source = run.gemm.lower(*operand_specs(m, n, k, tg.float16, "mk", "kn")).source
    assert "workspace" in source and "store_predicated" in source   # the tail's partials, straight from registers


def test_stream_k_choices_thin_the_tail_only_where_its_slices_take_fewer_rounds():
    assert designs.stream_k_choices(330, 2048, 132, 64) == [2, 3, 4, 5, 6, 7, 8]   # 66 tiles left: S slices, S/2 rounds
    assert designs.stream_k_choices(264, 2048, 132, 64) == []                # whole rounds
    assert designs.stream_k_choices(100, 2048, 132, 64) == []                # no whole round: split-K's ground
    assert 2 not in designs.stream_k_choices(132 + 124, 2048, 132, 64)       # 248 slices of K/2 take two rounds


def test_the_model_counts_whole_rounds_at_the_tile_time_and_the_tail_at_a_slice_time():
    m, n, k = 1234, 4104, 2048   # 128x128 tiles: 330, two rounds of 132 and 66 left
    params = dict(tile_n=128, schedule="cooperative", num_sms=132, a_layout="mk", b_layout="kn")
    plain = designs.design_prediction(m, n, k, tg.float16, "h200", params)
    streamed = designs.design_prediction(m, n, k, tg.float16, "h200", dict(params, stream_k=2))
    sliced = tg.model.budget(plain.gemm.config, shape=(m, n, k // 2), device="h200")
    assert streamed.stream_k == 2 and plain.gemm.tiles == 330
    assert streamed.main_s == pytest.approx(max(2 * plain.gemm.tile_time_s + sliced.tile_time_s,
                                                plain.gemm.dram_time_s, plain.gemm.l2_time_s)
                                            + plain.gemm.device.launch_overhead_s)
    assert streamed.reduction_s > 0 and streamed.predicted_s == pytest.approx(
        max(streamed.main_s, streamed.streaming_s) + streamed.reduction_s)
    assert "stream-K tail x2" in streamed.describe()


def test_a_stream_k_design_is_ranked_behind_a_margin_and_never_runs_in_clusters():
    params = dict(tile_n=128, schedule="cooperative", num_sms=132, a_layout="mk", b_layout="kn", stream_k=2)
    prediction = designs.design_prediction(1234, 4104, 2048, tg.float16, "h200", params)
    assert designs.rank_s(params, prediction) == pytest.approx(prediction.predicted_s
                                                               * (1 + designs.STREAM_K_MARGIN))
    assert designs.family(params) == "classic 128-row + stream-K" and not designs.clusterable(params)
    assert designs.two_pass(params) and designs.describe(params).endswith("stream-K tail x2")


def test_where_a_last_round_is_partly_idle_the_classic_designs_are_ranked_with_stream_k_tails_too():
    ranked = designs.predictions(1234, 4104, 2048, "float16", "h200", 132, "mk", "kn")   # 128x128: 330 tiles
    tails = [params for params, _ in ranked if designs.family(params) == "classic 128-row + stream-K"]
    assert tails and all(params["stream_k"] in designs.stream_k_choices(
        designs._tiles(1234, 4104, params), 2048, 132, 64) for params in tails)
