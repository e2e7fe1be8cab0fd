"""GpuTimer: the GPU `measure` for tg.tune.tune — refuses cleanly without a GPU, times real kernels with one."""
import pytest

import tilegemm as tg
from tilegemm.ops import hopper_matmul
from tilegemm.runtime import device_count
from tilegemm.tune import GpuTimer, tune

on_gpu = pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")


@pytest.mark.skipif(device_count() > 0, reason="checks the behaviour without a GPU")
def test_without_a_gpu_the_timer_says_how_to_tune_instead():
    with pytest.raises(tg.LaunchError, match="no CUDA GPU"):
        GpuTimer((256, 256, 256))


@pytest.mark.gpu
@on_gpu
def test_tune_measures_the_models_top_candidates_on_the_gpu(tmp_path):
    shape = (1024, 1024, 512)
    space = {"tile_n": [128, 256], "stages": [3, 4], "schedule": ["cooperative"]}
    result = tune(hopper_matmul.build, shape, space, top_k=2, measure=GpuTimer(shape, iters=5, batches=3),
                  cache_dir=tmp_path, progress=False)
    assert result.measured and result.best.measured_s is not None
    flops = 2 * 1024 * 1024 * 512
    assert 1e12 < flops / result.best.measured_s < 2e15      # a real H100/H200-class rate, not a stub
