"""examples/fp8_block_scaled_matmul.py: its block quantization reproduces the inputs to e4m3's precision, and
tg.matmul of its block-scaled operands matches the float64 dequantized product (interpreted; on the GPU too)."""
import os

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import load_example

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fp8_block_scaled_matmul.py"))
SHAPE = (200, 136, 400)   # partial row, column and K blocks


def relative_error(c, ref):
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("rows", [1, 128])
def test_block_quantization_keeps_each_element_to_e4m3_precision(rows):
    x = np.random.default_rng(0).standard_normal((200, 300))
    x8, scale = EXAMPLE.quantize_blocks(x, rows)
    assert scale.shape == (-(-200 // rows), 3)
    step = float(scale.max()) * 2 ** -9   # e4m3's subnormal spacing, scaled
    np.testing.assert_allclose(x8.astype(np.float64) * EXAMPLE.expand(scale, rows, 200, 300), x, rtol=2 ** -3,
                               atol=step)


def test_the_block_scaled_call_matches_the_dequantized_float64_product_in_the_interpreter():
    a8, w8, sa, sb = inputs = EXAMPLE.example_inputs(*SHAPE)
    c = tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, interpret=True)
    assert c.dtype == tg.bfloat16
    assert relative_error(c, EXAMPLE.reference(*inputs)) < 4e-3   # bf16's rounding, 2^-9 relative at most


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_the_block_scaled_call_matches_the_dequantized_float64_product_on_the_gpu():
    a8, w8, sa, sb = inputs = EXAMPLE.example_inputs(1000, 1016, 4096)
    c = tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb)
    assert relative_error(c, EXAMPLE.reference(*inputs)) < 4e-3   # promoted in f32: bf16's rounding dominates
