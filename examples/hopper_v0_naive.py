"""Hopper ladder v0 — naive: every block reads its operands straight from global memory.

The first rung of the Croqtile GEMM ladder this one follows: each output element is
a loop over K reading A and B from HBM. No data is shared between the threads
of a block, the loads are scattered, and only the CUDA cores' FMA pipes work:
0.38 TFLOP/s on an H800 PCIe at 8192^3, 0.08% of cuBLAS (447.5 TFLOP/s).

In tilegemm a block is one warpgroup (128 CUDA threads) that owns a 32x32
output tile. It walks K in chunks of `tile_k`; `tg.dot` on two GMEM views
multiplies a chunk of A by a chunk of B. The operands are not in shared
memory, so the lowering uses CUDA-core FMAs (the SIMT path). Chunks that run
past the edge of A or B read zeros and the store drops elements past C's edge,
so any M, N and K work.
"""
import tilegemm as tg

ARCH = "sm_90a"
CONFIG = dict(tile_m=32, tile_n=32, tile_k=32)
SHAPES = {
    "verify": [(1024, 1024, 1024), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (40, 24, 8)],
    # 4096^3 rather than the ladder's 8192^3: at ~0.4 TFLOP/s one 8192^3 run takes ~3 s.
    "benchmark": (4096, 4096, 4096),
}


def build(m, n, k, dtype=tg.float16, *, tile_m=32, tile_n=32, tile_k=32):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation; one tile_m x tile_n output tile per block."""

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), name="hopper_v0_naive")
    def matmul(a, b, c):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        def k_step(ki, acc):
            ks = tg.ds(ki * tile_k, tile_k)
            return tg.dot(a.at[rows, ks], b.at[ks, cols], acc)      # operands read from GMEM
        acc = tg.fori_loop(0, tg.cdiv(k, tile_k), k_step, tg.zeros((tile_m, tile_n), tg.float32))
        c.at[rows, cols][...] = acc.astype(dtype)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
