"""Hopper ladder v2 — TMA + WGMMA: hardware copies and tensor-core MMAs, one stage.

The biggest jump of the Croqtile ladder: 284.4 TFLOP/s (188x v1, 63.6% of cuBLAS). Two
Hopper features replace the two bottlenecks of v1:

* TMA (`copy_gmem_to_smem`) replaces the cooperative copy: one thread hands a
  tile's coordinates to the copy engine, which moves it, zero-fills what lies
  past the array's edge, and signals a barrier with the bytes it delivered.
* WGMMA (`wgmma`) replaces the FMAs: the warpgroup multiplies a 64x64 tile of
  A by a 64x128 tile of B on the tensor cores, accumulating in registers (ACC).

Both read shared memory in the 128-byte-swizzled layout the tensor cores want;
the SMEM buffers declare it (TilingTransform + SwizzleTransform) and the
verifier checks that TMA and WGMMA agree on it. The epilogue converts the
accumulator to the output dtype in SMEM and stores the tile with TMA.

What is still slow: each K step waits for its copy before the MMA starts, and
for the MMA before the next copy — memory and compute never overlap.
"""
import tilegemm as tg

ARCH = "sm_90a"
CONFIG = dict(tile_m=64, tile_n=128, tile_k=64)
SHAPES = {
    "verify": [(2048, 2048, 2048), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (40, 24, 8)],
    "benchmark": (8192, 8192, 8192),
}


def build(m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=128, tile_k=64):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation: TMA loads, WGMMA, TMA-store epilogue."""
    scratch = dict(
        a_smem=tg.SMEM((tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        c_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        acc=tg.ACC((tile_m, tile_n), tg.float32),
        loaded=tg.Barrier(num_arrivals=2),          # two TMA copies (A and B) per K step
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), scratch_shapes=scratch, name="hopper_v2_tma_wgmma")
    def matmul(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        def k_step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded)
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded)
            tg.barrier_wait(loaded)                    # both tiles have landed
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)                           # the MMA has read the tiles: they may be overwritten
        tg.fori_loop(0, tg.cdiv(k, tile_k), k_step, None)

        c_smem[...] = acc[...].astype(dtype)
        tg.commit_smem()                               # make the stores visible to the TMA engine
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
