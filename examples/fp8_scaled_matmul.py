"""Hopper, fp8: c = (A @ B) * scale_a * scale_b in bf16 from e4m3 (or e5m2) A [M, K] and a weight W [N, K].

What changes from a 16-bit GEMM (hopper_transposed_operands.py) is data, not code:

* the tensor cores read 8-bit operands only K-major, so A is stored [M, K] and
  B comes as W [N, K] (B = W.T), read through `W_smem.T` as a K-major operand
  (the verifier refuses an N-major fp8 B at the wgmma's line);
* one WGMMA consumes K = 32 fp8 elements (32 bytes, as 16 f16 ones), so a
  128-element K tile is one 128-byte swizzle row and four instructions;
* the accumulator is f32; the epilogue multiplies it by A's per-row scale
  [M, 1] and B's per-column scale [1, N], read straight into the accumulator's
  register layout and broadcast as numpy broadcasts them (torch._scaled_mm's
  row-wise scaling), and stores bf16.

tg.matmul(a8, w8.T, scale_a=, scale_b=) runs the same scaling in the persistent
flagship (tilegemm/ops/hopper_matmul.py). Run this file to interpret it at a
ragged shape and compare with numpy.
"""
import ml_dtypes
import numpy as np

import tilegemm as tg

ARCH = "sm_90a"
TILE_M, TILE_N, TILE_K = 128, 128, 128
MMA_ROWS = 64   # rows of one WGMMA accumulator


def build(m, n, k, dtype=tg.float8_e4m3fn, out_dtype=tg.bfloat16):
    """c [m, n] of `out_dtype` = (a [m, k] @ w [n, k].T) * scale_a [m, 1] * scale_b [1, n], `dtype` operands."""
    scratch = dict(
        a_smem=tg.SMEM((TILE_M, TILE_K), dtype, transforms=tg.mma_transforms(TILE_K, dtype)),
        w_smem=tg.SMEM((TILE_N, TILE_K), dtype, transforms=tg.mma_transforms(TILE_K, dtype)),
        c_smem=tg.SMEM((TILE_M, TILE_N), out_dtype, transforms=tg.mma_transforms(TILE_N, out_dtype)),
        acc0=tg.ACC((MMA_ROWS, TILE_N), tg.float32), acc1=tg.ACC((MMA_ROWS, TILE_N), tg.float32),
        loaded=tg.Barrier(num_arrivals=2),
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((n, k), dtype),
                         tg.ShapeDtype((m, 1), tg.float32), tg.ShapeDtype((1, n), tg.float32)],
               out_shape=tg.ShapeDtype((m, n), out_dtype), grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N)),
               grid_names=("m", "n"), scratch_shapes=scratch, name="fp8_scaled_matmul")
    def scaled_matmul(a, w, scale_a, scale_b, c, a_smem, w_smem, c_smem, acc0, acc1, loaded):
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)

        def k_step(ki, _):
            ks = tg.ds(ki * TILE_K, TILE_K)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded)
            tg.copy_gmem_to_smem(w.at[cols, ks], w_smem, loaded)
            tg.barrier_wait(loaded)
            for i, acc in enumerate((acc0, acc1)):
                tg.wgmma(acc, a_smem.at[i * MMA_ROWS:(i + 1) * MMA_ROWS], w_smem.T)   # B = W.T, read K-major
            tg.wgmma_wait(0)                      # the MMAs have read the tiles: they may be overwritten
        tg.fori_loop(0, tg.cdiv(k, TILE_K), k_step, None)

        for i, acc in enumerate((acc0, acc1)):
            acc_rows = tg.ds(tg.axis_index("m") * TILE_M + i * MMA_ROWS, MMA_ROWS)
            scaled = acc[...] * scale_a.at[acc_rows, tg.ds(0, 1)][...] * scale_b.at[tg.ds(0, 1), cols][...]
            c_smem[i * MMA_ROWS:(i + 1) * MMA_ROWS] = scaled.astype(out_dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return scaled_matmul


def example_inputs(m, n, k, dtype=tg.float8_e4m3fn, seed=0):
    """iid-normal A [m, k] and W [n, k] quantized to `dtype` with per-row amax scales: (a8, w8, scale_a, scale_b)."""
    rng = np.random.default_rng(seed)
    largest = float(ml_dtypes.finfo(dtype).max)   # 448 for e4m3, 57344 for e5m2

    def quantize(x):
        scale = (np.abs(x).max(axis=1, keepdims=True) / largest).astype(np.float32)
        return (x / scale).astype(dtype), scale
    (a8, sa), (w8, sw) = quantize(rng.standard_normal((m, k))), quantize(rng.standard_normal((n, k)))
    return a8, w8, sa, sw.T.copy()


def reference(a8, w8, scale_a, scale_b):
    """The float64 product of the fp8 values, scaled."""
    return (a8.astype(np.float64) @ w8.astype(np.float64).T) * scale_a * scale_b


if __name__ == "__main__":
    shape = (200, 264, 320)
    inputs = example_inputs(*shape)
    c = build(*shape)(*inputs, interpret=True)
    ref = reference(*inputs)
    error = np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)
    print(f"{shape}: relative error against the float64 product {error:.2e} (bf16 output rounding: < 4e-3)")
