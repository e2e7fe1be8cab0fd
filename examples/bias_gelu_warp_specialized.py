"""A warp-specialized Hopper GEMM with a fused bias + GELU epilogue, written as a Pallas Mosaic GPU user would.

c = gelu(a @ b + bias) in f16, GELU in its tanh form (jax.nn.gelu's default):
a TMA producer warpgroup fills a ring of SMEM stages, a WGMMA consumer
warpgroup multiplies, and the consumer's epilogue works on the f32 accumulator
in registers before the one TMA store:

    x = acc[...] + bias.at[cols][...][None, :]       # the bias row, broadcast over the tile's rows
    y = 0.5 * x * (1 + tg.tanh(0.79788456 * (x + 0.044715 * x ** 3)))

The bias is read straight into the accumulator's register layout (each thread
loads the columns it holds); `x ** 3` is two multiplications.

    python examples/bias_gelu_warp_specialized.py     # on the GPU if there is one, else interpreted
"""
import math

import numpy as np

import tilegemm as tg

PRODUCER, CONSUMER = 0, 1  # warpgroup indices
GELU_C = math.sqrt(2 / math.pi)


def gelu(x):
    """GELU, tanh form, on a float32 register array."""
    return 0.5 * x * (1.0 + tg.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def build(m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=128, tile_k=64, stages=2):
    """c[m, n] = gelu(a[m, k] @ b[k, n] + bias[n]) with f32 accumulation and an f32 bias."""
    k_iters = tg.cdiv(k, tile_k)
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        c_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),    # A and B copies of a slot landed
        empty=tg.Barrier(num_arrivals=1, num_barriers=stages),   # the consumer is done with a slot
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype), tg.ShapeDtype((n,), tg.float32)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), num_threads=2, thread_name="wg", scratch_shapes=scratch,
               name="bias_gelu_warp_specialized")
    def matmul_bias_gelu(a, b, bias, c, a_smem, b_smem, c_smem, full, empty):
        wg = tg.axis_index("wg")
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        @tg.when(wg == PRODUCER)
        def _producer():
            def fill(ki, _):
                slot = ki % stages

                @tg.when(ki >= stages)
                def _():
                    tg.barrier_wait(empty.at[slot])     # the consumer released this slot
                ks = tg.ds(ki * tile_k, tile_k)
                tg.copy_gmem_to_smem(a.at[rows, ks], a_smem.at[slot], full.at[slot])
                tg.copy_gmem_to_smem(b.at[ks, cols], b_smem.at[slot], full.at[slot])
            tg.fori_loop(0, k_iters, fill, None)

        @tg.when(wg == CONSUMER)
        def _consumer():
            def compute(acc):
                def consume(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(full.at[slot])
                    tg.wgmma(acc, a_smem.at[slot], b_smem.at[slot])
                    tg.wgmma_wait(0)
                    tg.barrier_arrive(empty.at[slot])
                tg.fori_loop(0, k_iters, consume, None)

                x = acc[...] + bias.at[cols][...][None, :]    # (tile_m, tile_n) + (1, tile_n)
                c_smem[...] = gelu(x).astype(dtype)
                tg.commit_smem()
                tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
                tg.wait_smem_to_gmem(0)
            tg.run_scoped(compute, tg.ACC((tile_m, tile_n), tg.float32))
    return matmul_bias_gelu


def reference(a, b, bias):
    """gelu(a @ b + bias) in float64 numpy."""
    x = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x ** 3)))


def main():
    from tilegemm.showcase import gpu_present, random_inputs
    on_gpu = gpu_present()
    m, n, k = (2048, 2048, 2048) if on_gpu else (200, 136, 72)
    a, b = random_inputs(m, n, k, tg.float16)
    bias = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    c = build(m, n, k)(a, b, bias, interpret=not on_gpu)
    ref = reference(a, b, bias)
    error = np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)
    print(f"gelu(a @ b + bias) at {m}x{n}x{k} ({'GPU' if on_gpu else 'interpreted'}): relative error {error:.2e}")


if __name__ == "__main__":
    main()
