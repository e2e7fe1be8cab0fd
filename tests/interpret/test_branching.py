"""tg.while_loop and tg.cond in the interpreter: scalar carries and results as Python computes them, and a GEMM whose
K loop is a while_loop with TMA copies, barrier waits and WGMMAs in its body."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs

TILE_M, TILE_N, TILE_K = 64, 128, 64


def halvings(start):
    """(how many halvings take `start` below 10, the value then, the sum of the values halved): Python's answer."""
    n, v, total = 0, start, 0
    while v >= 10:
        n, v, total = n + 1, v // 2, total + v
    return n, v, total


def branchy_kernel():
    """Each block of a (3,) grid runs halvings(100 + 37 b) as a while_loop, combines its results with a cond, and
    prints them; block 0 zeroes the output."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32), grid=(3,), grid_names=("b",))
    def branchy(x, out):
        b = tg.axis_index("b")
        n, v, total = tg.while_loop(lambda c: c[1] >= 10, lambda c: (c[0] + 1, c[1] // 2, c[2] + c[1]),
                                    (0, 100 + b * 37, 0))
        combined = tg.cond(b == 1, lambda n, t: n * 1000 + t, lambda n, t: t - n, n, total)
        tg.debug_print("b={} n={} v={} total={} combined={}", b, n, v, total, combined)

        @tg.when(b == 0)
        def _():
            out[...] = tg.zeros((64, 64), tg.float32)
    return branchy


def expected_lines():
    lines = []
    for b in range(3):
        n, v, total = halvings(100 + 37 * b)
        lines.append(f"b={b} n={n} v={v} total={total} combined={n * 1000 + total if b == 1 else total - n}")
    return sorted(lines)


def test_while_loop_and_cond_compute_what_python_does(capsys):
    branchy_kernel()(np.ones((64, 64), np.float32), interpret=True)
    assert sorted(capsys.readouterr().out.splitlines()) == expected_lines()


def while_k_loop(m, n, k):
    """C = A @ B, one 64x128 tile per block, its K loop a tg.while_loop over the step index."""
    mma_layout = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM((TILE_M, TILE_K), tg.float16, transforms=mma_layout(TILE_K)),
                                   b_smem=tg.SMEM((TILE_K, TILE_N), tg.float16, transforms=mma_layout(TILE_N)),
                                   c_smem=tg.SMEM((TILE_M, TILE_N), tg.float16), acc=tg.ACC((TILE_M, TILE_N)),
                                   loaded=tg.Barrier(num_arrivals=2)))
    def while_matmul(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)

        def step(ki):
            ks = tg.ds(ki * TILE_K, TILE_K)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded.at[0])
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
            return ki + 1
        tg.while_loop(lambda ki: ki * TILE_K < k, step, 0)

        c_smem[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return while_matmul


@pytest.mark.parametrize("shape", [(128, 256, 128), (200, 136, 72)])
def test_a_while_loop_can_carry_a_pipelines_k_loop(shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    out = while_k_loop(m, n, k)(a, b, interpret=True)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-2
