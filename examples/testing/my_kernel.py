"""A user's kernel: c = relu(a @ b), one 64x128 tile per block, TMA loads, WGMMA, the ReLU fused into the epilogue.

test_my_kernel.py beside it tests it with tilegemm.testing (docs/testing.md).
"""
import tilegemm as tg


def build(m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=128, tile_k=64):
    """The kernel for a [m, k] @ b [k, n] in `dtype`, accumulated in f32."""
    scratch = [tg.SMEM((tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
               tg.SMEM((tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
               tg.SMEM((tile_m, tile_n), dtype), tg.ACC((tile_m, tile_n)), tg.Barrier(num_arrivals=2)]

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), scratch_shapes=scratch)
    def matmul_relu(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        def step(kk, _):
            ks = tg.ds(kk * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded)
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded)
            tg.barrier_wait(loaded)
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)

        c_smem[...] = tg.maximum(acc[...], 0.0).astype(dtype)   # the fused ReLU
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return matmul_relu
