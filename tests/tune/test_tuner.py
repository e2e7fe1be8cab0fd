"""tg.tune: illegal candidates dropped before compiling, the rest ranked by the model, the top measured
and cached on disk."""
import json

import pytest

import tilegemm as tg
from tilegemm.model import get_device
from tilegemm.tune import ResultCache, tune
from tilegemm.tune.result import CACHED, FAILED, ILLEGAL, MEASURED

from model.gemm_kernels import build

SHAPE = (2048, 2048, 1024)
# 128 x 128 tiles with 8 stages overflow shared memory (the verifier says so); a 128 x 224 accumulator passes
# the verifier but leaves its warpgroup no registers to work with (the model says so).
SPACE = {"tile_n": [64, 128, 224], "stages": [2, 4, 8]}


class Timer:
    """A stand-in for GPU timing: records what it was asked to time and answers from a table."""

    def __init__(self, seconds=lambda params: 1e-3 / params["stages"]):
        self.calls = []
        self.seconds = seconds

    def __call__(self, kernel, params):
        assert isinstance(kernel, tg.Kernel)
        self.calls.append(dict(params))
        return self.seconds(params)


def test_without_measurement_the_model_ranks_and_says_so(tmp_path):
    lines = []
    result = tune(build, SHAPE, SPACE, progress=lines.append, cache_dir=tmp_path)
    assert not result.measured
    assert "PREDICTED by the model, not measured" in result.table()
    predicted = [c.predicted_s for c in result.ranked]
    assert predicted == sorted(predicted)
    assert result.best is result.ranked[0]
    assert len(lines) == len(result.candidates) + 1
    assert not (tmp_path / ResultCache.FILE_NAME).exists()


def test_illegal_candidates_are_dropped_with_the_reason():
    result = tune(build, SHAPE, SPACE, progress=False)
    reasons = {(c.params["tile_n"], c.params["stages"]): c.reason for c in result.illegal}
    assert "shared memory" in reasons[(128, 8)] and "gemm_kernels.py" in reasons[(128, 8)]   # the verifier
    assert "registers per thread" in reasons[(224, 2)]                                        # the model
    for c in result.illegal:     # rejected by the verifier (never budgeted) or by the model
        assert c.status == ILLEGAL and (c.budget is None or not c.budget.legal)
    assert all((c.params["tile_n"], c.params["stages"]) not in reasons for c in result.ranked)


def test_parameters_the_builder_refuses_are_illegal_candidates():
    from tilegemm.ops import hopper_matmul
    space = {"tile_n": [192, 256], "schedule": ["cooperative", "pingpong"]}
    result = tune(hopper_matmul.build, (4096, 4096, 4096), space, progress=False)
    (refused,) = result.illegal
    assert refused.params == {"tile_n": 256, "schedule": "pingpong"} and "or schedule='cooperative'" in refused.reason
    assert len(result.ranked) == 3


def test_only_the_top_predicted_legal_candidates_are_measured(tmp_path):
    timer = Timer()
    result = tune(build, SHAPE, SPACE, top_k=3, measure=timer, progress=False, cache_dir=tmp_path)
    top = [c.params for c in result.ranked[:3]]
    assert timer.calls == top
    assert result.measured and result.best.status == MEASURED
    assert result.best.measured_s == min(1e-3 / p["stages"] for p in top)
    illegal = [c.params for c in result.illegal]
    assert not any(call in illegal for call in timer.calls)


def test_measurements_are_cached_by_device_and_graph_fingerprint(tmp_path):
    tune(build, SHAPE, SPACE, top_k=2, measure=Timer(), progress=False, cache_dir=tmp_path)
    again = Timer()
    result = tune(build, SHAPE, SPACE, top_k=2, measure=again, progress=False, cache_dir=tmp_path)
    assert again.calls == []
    assert [c.status for c in result.ranked[:2]] == [CACHED, CACHED]
    stored = json.loads((tmp_path / ResultCache.FILE_NAME).read_text())
    keys = {ResultCache.key(get_device("h200"), c.graph.fingerprint()) for c in result.ranked[:2]}
    assert set(stored) == keys
    assert all(record["shape"] == list(SHAPE) for record in stored.values())


def test_a_failed_measurement_leaves_the_others_standing(tmp_path):
    def flaky(params):
        if params["stages"] == 4:
            raise tg.CompileError("ptxas ran out of registers")
        return 2e-3
    result = tune(build, SHAPE, SPACE, top_k=4, measure=Timer(flaky), progress=False, cache_dir=tmp_path)
    failed = [c for c in result.candidates if c.status == FAILED]
    assert failed and all("ptxas" in c.reason for c in failed)
    assert result.measured and result.best.measured_s == 2e-3


def test_a_space_with_nothing_legal_or_nothing_at_all_is_an_error():
    with pytest.raises(tg.KernelError, match="none of the 1 candidates"):
        tune(build, SHAPE, {"tile_n": [128], "stages": [8]}, progress=False)
    with pytest.raises(ValueError, match="empty"):
        tune(build, SHAPE, {"tile_n": []}, progress=False)
