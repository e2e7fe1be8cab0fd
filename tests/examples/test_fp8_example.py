"""examples/fp8_scaled_matmul.py: interpreted at a ragged shape it matches the scaled float64 product in e4m3 and
e5m2; it compiles to K=32 fp8 WGMMAs; on the GPU it matches too."""
import os

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang.dtypes import as_dtype
from tilegemm.runtime import device_count
from tilegemm.showcase import load_example

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fp8_scaled_matmul.py"))
SHAPE = (200, 264, 320)   # partial row, column and K tiles
FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types


def relative_error(c, ref):
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("name", FP8)
def test_the_example_matches_the_scaled_float64_product_in_the_interpreter(name):
    inputs = EXAMPLE.example_inputs(*SHAPE, as_dtype(name))
    c = EXAMPLE.build(*SHAPE, as_dtype(name))(*inputs, interpret=True)
    assert c.dtype == tg.bfloat16
    assert relative_error(c, EXAMPLE.reference(*inputs)) < 4e-3   # bf16's rounding, 2^-9 relative at most


def test_the_example_compiles_to_k32_fp8_wgmmas():
    specs = [tg.ShapeDtype(x.shape, x.dtype) for x in EXAMPLE.example_inputs(*SHAPE)]
    ptx = EXAMPLE.build(*SHAPE).lower(*specs, arch="sm_90a").compile().ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_the_example_matches_the_scaled_float64_product_on_the_gpu():
    inputs = EXAMPLE.example_inputs(1000, 1016, 4096)
    c = EXAMPLE.build(1000, 1016, 4096)(*inputs)
    assert relative_error(c, EXAMPLE.reference(*inputs)) < 1e-2   # bf16 output and the tensor core's fp8 accumulation
