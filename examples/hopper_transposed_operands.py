"""Hopper, operands stored transposed: x @ w.T for a PyTorch linear layer's weight w [N, K], with no copy.

PyTorch keeps a linear layer's weight as w [N, K] and computes x @ w.T. The
tensor cores read 16-bit operands K-major or MN-major from shared memory, and
TMA copies tiles of any row-major array, so the kernel takes w as it is stored,
the Pallas way (`plgpu.transpose_ref`):

* TMA copies `w.at[cols, ks]` into an SMEM tile of shape (tile_n, tile_k), K
  contiguous and swizzled for it (`tg.mma_transforms(tile_k, dtype)`);
* WGMMA reads `tg.transpose_ref(w_smem, (1, 0))` (or `w_smem.T`), a (tile_k,
  tile_n) view of the same memory: a K-major B operand.

A given transposed, as at [K, M] (`a_layout="km"`), works the same way: its
(tile_k, tile_m) tile is read through a transpose as an M-major A (each 64-row
WGMMA instruction reads 64 stored columns of it). `b_layout="kn"` takes a
row-major B [K, N] instead. The verifier checks the swizzles on the stored
layout and refuses what the hardware cannot do (a TMA copy into a transposed
view, a transposed f32 operand). The pipeline is v2's (one stage, TMA then
WGMMA); tilegemm/ops/hopper_matmul.py has the same layouts in the flagship.
"""
import tilegemm as tg

ARCH = "sm_90a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, a_layout="mk", b_layout="nk")
SHAPES = {
    "verify": [(2048, 2048, 2048), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (40, 24, 8)],
    "benchmark": (8192, 8192, 8192),
}


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, a_layout="mk", b_layout="nk"):
    """c[m, n] = A @ B for a = A [m, k] ("mk") or A.T [k, m] ("km"), and b = B.T [n, k] ("nk") or B [k, n] ("kn")."""
    a_tile = (tile_m, tile_k) if a_layout == "mk" else (tile_k, tile_m)   # as the array stores it
    b_tile = (tile_n, tile_k) if b_layout == "nk" else (tile_k, tile_n)
    scratch = dict(
        a_smem=tg.SMEM(a_tile, dtype, transforms=tg.mma_transforms(a_tile[1], dtype)),
        b_smem=tg.SMEM(b_tile, dtype, transforms=tg.mma_transforms(b_tile[1], dtype)),
        c_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        acc=tg.ACC((tile_m, tile_n), tg.float32),
        loaded=tg.Barrier(num_arrivals=2),
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k) if a_layout == "mk" else (k, m), dtype),
                         tg.ShapeDtype((n, k) if b_layout == "nk" else (k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), scratch_shapes=scratch, name="hopper_transposed_operands")
    def matmul(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)
        a_op = a_smem if a_layout == "mk" else tg.transpose_ref(a_smem, (1, 0))   # (tile_m, tile_k) either way
        b_op = tg.transpose_ref(b_smem, (1, 0)) if b_layout == "nk" else b_smem   # (tile_k, tile_n) either way

        def k_step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks] if a_layout == "mk" else a.at[ks, rows], a_smem, loaded)
            tg.copy_gmem_to_smem(b.at[cols, ks] if b_layout == "nk" else b.at[ks, cols], b_smem, loaded)
            tg.barrier_wait(loaded)
            tg.wgmma(acc, a_op, b_op)
            tg.wgmma_wait(0)                      # the MMA has read the tiles: they may be overwritten
        tg.fori_loop(0, tg.cdiv(k, tile_k), k_step, None)

        c_smem[...] = acc[...].astype(dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
