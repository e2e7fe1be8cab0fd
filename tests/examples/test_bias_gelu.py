"""examples/bias_gelu_warp_specialized.py: gelu(a @ b + bias) against numpy, interpreted, lowered and on the GPU."""
import os

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import gpu_present, load_example, random_inputs

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "bias_gelu_warp_specialized.py"))


def run(m, n, k, interpret):
    a, b = random_inputs(m, n, k, tg.float16)
    bias = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    out = EXAMPLE.build(m, n, k)(a, b, bias, interpret=interpret)
    ref = EXAMPLE.reference(a, b, bias)
    return np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("shape", [(200, 136, 72), (128, 256, 192)])
def test_the_example_matches_numpy_in_the_interpreter(shape):
    assert run(*shape, interpret=True) < 1e-2


def test_the_example_lowers_the_bias_broadcast_and_tanh_into_the_consumers_epilogue():
    m, n, k = 200, 136, 72
    lowered = EXAMPLE.build(m, n, k).lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16),
                                           tg.ShapeDtype((n,), tg.float32), arch="sm_90a")
    assert "cute.composition(bias_view, cute.make_layout((64, 128), stride=(0, 1)))" in lowered.source
    assert "cute.math.tanh(" in lowered.source
    assert "wgmma.mma_async" in lowered.compile().ptx


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("shape", [(2048, 2048, 2048), (1000, 1016, 520)])
def test_the_example_matches_numpy_on_the_gpu(shape):
    assert run(*shape, interpret=False) < 1e-2
