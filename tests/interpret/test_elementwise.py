"""Elementwise math, broadcasting and reductions in a WGMMA kernel's epilogue, against numpy: exp, tanh, erf, ...,
x ** n, row and column vectors broadcast with `None` indices, tg.broadcast_to, .T and .reshape, numpy ufuncs on
register arrays, row maxima and sums."""
import math

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs
from tests.lower.kernels import wgmma_main_loop

TILE_M, TILE_N, TILE_K = 64, 128, 64


def matmul_epilogue(m, n, k, epilogue):
    """c = epilogue(a @ b, row, col) in f16 (row: an [n] f32 vector, col: an [m] f32 vector), one 64x128 tile per
    block; `epilogue(acc, row, col)` gets the f32 accumulator tile and the vectors' [128] and [64] pieces."""
    mma_layout = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM((TILE_M, TILE_K), tg.float16, transforms=mma_layout(TILE_K)),
                                   b_smem=tg.SMEM((TILE_K, TILE_N), tg.float16, transforms=mma_layout(TILE_N)),
                                   c_smem=tg.SMEM((TILE_M, TILE_N), tg.float16), acc=tg.ACC((TILE_M, TILE_N)),
                                   loaded=tg.Barrier(num_arrivals=2)))
    def math_epilogue(a, b, row, col, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)

        wgmma_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc, loaded, k)

        c_smem[...] = epilogue(acc[...], row.at[cols][...], col.at[rows][...]).astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return math_epilogue


ERF = np.vectorize(math.erf)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + tg.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


# name: (the epilogue as traced, the same in float64 numpy)
EPILOGUES = {
    "bias_gelu_tanh": (lambda acc, row, col: gelu_tanh(acc + row[None, :]),
                       lambda acc, row, col: 0.5 * (acc + row) * (1 + np.tanh(0.7978845608028654 * (
                           (acc + row) + 0.044715 * (acc + row) ** 3)))),
    "bias_gelu_erf": (lambda acc, row, col: 0.5 * (acc + row) * (1.0 + tg.erf((acc + row) * 0.7071067811865476)),
                      lambda acc, row, col: 0.5 * (acc + row) * (1 + ERF((acc + row) / math.sqrt(2)))),
    "silu_row_scale": (lambda acc, row, col: acc * tg.sigmoid(acc) * col[:, None],
                       lambda acc, row, col: acc / (1 + np.exp(-acc)) * col[:, None]),
    "broadcast_to": (lambda acc, row, col: acc * tg.broadcast_to(row, (TILE_M, TILE_N)) + tg.broadcast_to(
                         col[:, None], (TILE_M, TILE_N)),
                     lambda acc, row, col: acc * row + col[:, None]),
    "exp_log_abs": (lambda acc, row, col: tg.log(tg.exp(acc * 0.125) + abs(row)[None, :]),
                    lambda acc, row, col: np.log(np.exp(acc * 0.125) + np.abs(row))),
    "sqrt_rsqrt_exp2": (lambda acc, row, col: tg.sqrt(abs(acc)) * tg.rsqrt(abs(col[:, None]) + 1.0) + tg.exp2(row),
                        lambda acc, row, col: np.sqrt(np.abs(acc)) / np.sqrt(np.abs(col[:, None]) + 1) + 2 ** row),
    "numpy_ufuncs": (lambda acc, row, col: np.maximum(np.tanh(acc), np.exp(row)[None, :] - 1.5) ** 2.0,
                     lambda acc, row, col: np.maximum(np.tanh(acc), np.exp(row) - 1.5) ** 2),
    "transposed_column": (lambda acc, row, col: acc * col.reshape(1, -1).T + row.reshape(-1, 1).T,
                          lambda acc, row, col: acc * col[:, None] + row[None, :]),
    "reshaped_row": (lambda acc, row, col: acc - row.reshape((1, TILE_N)) * col[None, :].transpose(1, 0),
                     lambda acc, row, col: acc - row[None, :] * col[:, None]),
    "power_of_array": (lambda acc, row, col: abs(acc) ** tg.broadcast_to(abs(row) * 0.5, (TILE_M, TILE_N))
                       + 2.0 ** tg.minimum(acc, 1.0),
                       lambda acc, row, col: np.abs(acc) ** (np.abs(row) * 0.5) + 2.0 ** np.minimum(acc, 1.0)),
}
SHAPES = [(128, 256, 128), (200, 136, 72)]


def run_case(name, shape, interpret):
    """(the kernel's output, the float64 numpy reference) for EPILOGUES[name] at `shape`."""
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    rng = np.random.default_rng(5)
    row, col = rng.standard_normal(n).astype(np.float32), rng.standard_normal(m).astype(np.float32)
    traced, reference = EPILOGUES[name]
    out = matmul_epilogue(m, n, k, traced)(a, b, row, col, interpret=interpret)
    acc = a.astype(np.float64) @ b.astype(np.float64)
    return out, reference(acc, row.astype(np.float64), col.astype(np.float64))


def assert_matches(out, ref):
    assert np.isfinite(out.astype(np.float32)).all()
    assert np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref) < 1e-2


ELEMENTWISE = list(EPILOGUES)


@pytest.mark.parametrize("name", ELEMENTWISE)
@pytest.mark.parametrize("shape", SHAPES, ids=["128x256x128", "200x136x72"])
def test_epilogue_math_matches_numpy(name, shape):
    assert_matches(*run_case(name, shape, interpret=True))


def softmax(x):
    """The softmax of each row of a register array (numpy's reading of x.max and x.sum along axis 1)."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# Row reductions see one tile's columns: at these shapes a tile holds whole rows (n = TILE_N).
ROW_EPILOGUES = {
    "softmax": (lambda acc, row, col: softmax(acc), lambda acc, row, col: softmax(acc)),
    "row_min_and_sum": (lambda acc, row, col: acc - acc.min(axis=1)[:, None] + np.sum(acc * 0.01, axis=-1,
                                                                                         keepdims=True),
                        lambda acc, row, col: acc - acc.min(axis=1)[:, None] + (acc * 0.01).sum(1, keepdims=True)),
}
ROW_SHAPES = [(128, TILE_N, 128), (200, TILE_N, 72)]
EPILOGUES.update(ROW_EPILOGUES)


@pytest.mark.parametrize("name", list(ROW_EPILOGUES))
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=["128x128x128", "200x128x72"])
def test_row_reductions_match_numpy(name, shape):
    assert_matches(*run_case(name, shape, interpret=True))

