"""benchmarks/model_fit.py: the pairs of designs one process timed on one problem, ordered right when the model ranks
the one measured faster first; rows of other devices and labels no design has now are left out."""
import json
import os

import model_fit  # noqa: E402
from tilegemm.ops import designs  # noqa: E402

SHAPE = (1500, 2504, 1000)


def model_order():
    """The labels of the model's fastest-ranked design for SHAPE (f16, a @ b) on the H200 and of the first it ranks
    at least 5% slower."""
    ranked = [(designs.label(params), designs.rank_s(params, prediction)) for params, prediction in
              designs.predictions(*SHAPE, "float16", "h200", model_fit.NUM_SMS, "mk", "kn")]
    (first, first_s), = ranked[:1]
    return first, next(label for label, rank_s in ranked if rank_s >= first_s * 1.05)


def write_run(directory, name, device, rows):
    m, n, k = SHAPE
    results = [dict(m=m, n=n, k=k, dtype=dtype, design=label, ms=ms, suite="shapes", **extra)
               for label, ms, dtype, extra in rows]
    with open(os.path.join(directory, name), "w") as f:
        json.dump({"meta": {"device": device}, "results": results}, f)


def test_a_pair_is_ordered_right_when_the_design_measured_faster_is_ranked_first(tmp_path):
    first, second = model_order()
    write_run(tmp_path, "agrees.json", "NVIDIA H200", [(first, 0.010, "float16", {}), (second, 0.012, "float16", {})])
    write_run(tmp_path, "disagrees.json", "NVIDIA H200", [(first, 0.013, "float16", {}),
                                                          (second, 0.010, "float16", {})])
    rows = model_fit.measured(str(tmp_path))
    times = model_fit.rank_times(rows, "h200")
    found = sorted(model_fit.pairs(rows, times), key=lambda pair: pair.faster.source)
    assert [(pair.faster.source, pair.right) for pair in found] == [("agrees.json", True), ("disagrees.json", False)]
    assert "1 of 2 pairs ordered right" in model_fit.report(rows, times, found)


def test_pairs_closer_than_the_margin_and_rows_it_cannot_place_are_left_out(tmp_path):
    first, second = model_order()
    write_run(tmp_path, "close.json", "NVIDIA H200", [(first, 0.0100, "float16", {}), (second, 0.0101, "float16", {}),
                                                      ("classic 128-row: a design no longer built", 0.009, "float16",
                                                       {})])
    write_run(tmp_path, "h100.json", "NVIDIA H100 80GB HBM3", [(first, 0.01, "float16", {})])
    write_run(tmp_path, "float32.json", "NVIDIA H200", [(first, 0.01, "float32", {})])
    rows = model_fit.measured(str(tmp_path))
    times = model_fit.rank_times(rows, "h200")
    assert len(rows) == 3 and len(times) == 2
    assert model_fit.pairs(rows, times, margin=0.02) == []


def test_block_scaled_fp8_rows_are_placed_at_each_ring_depth_tuning_times(tmp_path):
    m, n, k = 4096, 7168, 16384
    pick, prediction = designs.block_scaled_predictions(m, n, k, "float8_e4m3fn", "h200", model_fit.NUM_SMS,
                                                        model_fit.BLOCK_SCALES)[0]
    shallower = dict(pick, stages=pick["stages"] - 1)
    rows = [dict(m=m, n=n, k=k, dtype="e4m3 block", scaling="block", design=designs.label(params), ms=ms)
            for params, ms in ((pick, 0.85), (shallower, 0.80))]
    with open(tmp_path / "fp8.json", "w") as f:
        json.dump({"meta": {"device": "NVIDIA H200"}, "results": rows}, f)
    measured = model_fit.measured(str(tmp_path))
    times = model_fit.rank_times(measured, "h200")
    assert [row.dtype for row in measured] == ["float8_e4m3fn"] * 2 and len(times) == 2
    assert times[measured[0]] == prediction.predicted_s
