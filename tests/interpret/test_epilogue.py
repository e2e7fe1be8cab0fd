"""Fused epilogues written with register-array math: scale, bias (a row vector broadcast over rows) and ReLU."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs
from tests.lower.kernels import wgmma_main_loop

TILE_M, TILE_N, TILE_K = 64, 128, 64


def matmul_scale_bias_relu(m, n, k, alpha):
    """relu(alpha * (a @ b) + bias) in f16, one 64x128 tile per block, the epilogue fused before the TMA store."""

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N)),
               grid_names=("m", "n"),
               scratch_shapes=[tg.SMEM((TILE_M, TILE_K), tg.float16, transforms=tg.mma_transforms(TILE_K, tg.float16)),
                               tg.SMEM((TILE_K, TILE_N), tg.float16, transforms=tg.mma_transforms(TILE_N, tg.float16)),
                               tg.SMEM((TILE_M, TILE_N), tg.float16), tg.ACC((TILE_M, TILE_N)),
                               tg.Barrier(num_arrivals=2)])
    def fused(a, b, bias, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)

        wgmma_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc, loaded, k)

        y = acc[...] * alpha + bias.at[cols][...]          # (64, 128) + (128,): bias broadcast over rows
        c_smem[...] = tg.maximum(y, 0.0).astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return fused


@pytest.mark.parametrize("shape", [(128, 256, 128), (200, 136, 72)])
def test_scale_bias_relu_epilogue_matches_numpy(shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    bias = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = matmul_scale_bias_relu(m, n, k, alpha=0.5)(a, b, bias, interpret=True)
    ref = np.maximum(0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + bias, 0.0)
    assert (out >= 0).all() and np.isfinite(out.astype(np.float32)).all()
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-2
