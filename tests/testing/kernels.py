"""A one-stage TMA + WGMMA matmul whose switches break it the ways tilegemm.testing must catch."""
import operator

import tilegemm as tg


def matmul(m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=64, tile_k=64, k_steps=tg.cdiv, m_blocks=tg.cdiv,
           wait=True, acc_dtype=tg.float32):
    """c = a @ b, one tile_m x tile_n tile per block. Breakages: `k_steps=FLOOR` (the K loop drops a ragged last
    step), `m_blocks=FLOOR` (the grid leaves ragged last rows unwritten), `wait=False` (the MMA does not wait for
    the tiles' copies), `acc_dtype=tg.float16` (an f16 accumulator)."""
    scratch = dict(a_smem=tg.SMEM((tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
                   b_smem=tg.SMEM((tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
                   c_smem=tg.SMEM((tile_m, tile_n), dtype), acc=tg.ACC((tile_m, tile_n), acc_dtype),
                   loaded=tg.Barrier(num_arrivals=2))

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(m_blocks(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), scratch_shapes=scratch)
    def matmul(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded)
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded)
            if wait:
                tg.barrier_wait(loaded)
            tg.wgmma(acc, a_smem, b_smem)  # line: wgmma
            tg.wgmma_wait(0)
        tg.fori_loop(0, k_steps(k, tile_k), step, None)

        c_smem[...] = acc[...].astype(dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return matmul


FLOOR = operator.floordiv   # the off-by-one: whole tiles only, where tg.cdiv counts a ragged last one


def reference(a, b):
    """The product in float64 (check hands the reference float64 copies of the inputs)."""
    return a @ b
