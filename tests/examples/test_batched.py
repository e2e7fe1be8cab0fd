"""examples/batched_pipeline.py: a batched GEMM with squeezed BlockSpec dimensions, against numpy, interpreted,
lowered (3-D TMA boxes) and on the GPU."""
import os

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import gpu_present, load_example

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "batched_pipeline.py"))


def run(batch, m, n, k, interpret):
    a, b = EXAMPLE.random_batch(batch, m, n, k)
    out = EXAMPLE.build(batch, m, n, k)(a, b, interpret=interpret)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("shape", [(3, 136, 200, 72), (2, 64, 128, 192)])
def test_every_batch_element_matches_numpy_in_the_interpreter(shape):
    assert run(*shape, interpret=True) < 1e-2


def test_the_batch_dimension_becomes_a_tma_box_of_size_1():
    batch, m, n, k = 3, 136, 200, 72
    lowered = EXAMPLE.build(batch, m, n, k).lower(tg.ShapeDtype((batch, m, k), tg.float16),
                                                  tg.ShapeDtype((batch, k, n), tg.float16), arch="sm_90a")
    ptx = lowered.compile().ptx
    assert "cp.async.bulk.tensor.3d" in ptx and "wgmma.mma_async" in ptx


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("shape", [(4, 1024, 1024, 512), (3, 1000, 1016, 520)])
def test_every_batch_element_matches_numpy_on_the_gpu(shape):
    assert run(*shape, interpret=False) < 1e-2
