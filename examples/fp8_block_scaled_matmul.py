"""Hopper, fp8 with block scales (DeepSeek-V3's recipe, as DeepGEMM runs it) through tg.matmul.

A is quantized to e4m3 per 1 x 128 group of each row (scale_a [M, ceil(K/128)]) and a
weight W [N, K] per 128 x 128 block (scale_b [ceil(K/128), ceil(N/128)] for B = W.T):
a small block's amax keeps an outlier from costing the rest of the tensor its precision.
`tg.matmul(a8, w8.T, scale_a=, scale_b=)` recognizes the block scales by their shapes
and runs the block-scaled flagship (tilegemm/ops/hopper_matmul.py with
tilegemm/ops/blockscaling.py): for every 128-wide K block the tensor cores sum into a
fresh f32 partial accumulator, which the consumer warpgroup scales and adds into the
tile's f32 accumulator (promotion: the tensor core's fp8 sums keep fewer bits than f32).

Run this file to interpret it at a ragged shape and compare with the float64 product of
the dequantized operands.
"""
import ml_dtypes
import numpy as np

import tilegemm as tg

BLOCK = 128   # elements of K per scale; rows of W per scale


def quantize_blocks(x, rows, dtype=tg.float8_e4m3fn):
    """(x [R, K] quantized to `dtype`, float32 scales [ceil(R/rows), ceil(K/128)]): each block of `rows` x 128
    elements divided by its amax over the type's largest value."""
    r, k = x.shape
    rb, kb = -(-r // rows), -(-k // BLOCK)
    padded = np.zeros((rb * rows, kb * BLOCK))
    padded[:r, :k] = np.abs(x)
    largest = float(ml_dtypes.finfo(dtype).max)   # 448 for e4m3
    scale = np.maximum(padded.reshape(rb, rows, kb, BLOCK).max(axis=(1, 3)) / largest, 1e-12).astype(np.float32)
    return (x / expand(scale, rows, r, k)).astype(dtype), scale


def expand(scale, rows, r, k):
    """Block scales broadcast over their blocks of an [r, k] array."""
    return np.repeat(np.repeat(scale, rows, axis=0), BLOCK, axis=1)[:r, :k]


def example_inputs(m, n, k, seed=0):
    """iid-normal A [m, k] and W [n, k], block-quantized: (a8, w8, scale_a [m, Kb], scale_b [Kb, Nb])."""
    rng = np.random.default_rng(seed)
    (a8, sa), (w8, sw) = quantize_blocks(rng.standard_normal((m, k)), 1), quantize_blocks(rng.standard_normal((n, k)),
                                                                                          BLOCK)
    return a8, w8, sa, sw.T.copy()


def reference(a8, w8, scale_a, scale_b):
    """The float64 product of the dequantized operands."""
    (m, k), n = a8.shape, w8.shape[0]
    a = a8.astype(np.float64) * expand(scale_a, 1, m, k)
    w = w8.astype(np.float64) * expand(scale_b.T, BLOCK, n, k)
    return a @ w.T


if __name__ == "__main__":
    m, n, k = 200, 264, 1040
    a8, w8, sa, sb = inputs = example_inputs(m, n, k)
    c = tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, interpret=True)
    ref = reference(*inputs)
    print(f"{m}x{n}x{k}: block-scaled c ({c.dtype}) against the float64 dequantized product: "
          f"{np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref):.2e} (bf16 output rounding: < 4e-3)")
