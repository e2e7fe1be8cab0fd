"""Blackwell ladder 4 — collective (2-CTA) MMA: a pair of blocks computes one 256x256 tile together.

Rung 3 is memory-bound: each block loads a 128x64 slice of A and a 64x128
slice of B per K step for a 128x128x64 MMA. Blackwell can run one MMA across a
*cluster of two blocks* on two SMs, each holding half of each operand: the
pair computes a (2 * tile_m) x (2 * tile_n) tile while each block still loads
one 128x64 and one 64x128 slice per K step, so every byte loaded feeds twice
the arithmetic.

What changed from rung 3:

* `cluster=(2,)`, and the grid counts pairs: it shrinks by 4 (2x in M and N).
* The TMEM accumulator is allocated `collective=True` with 2 * tile_n columns:
  each block holds its 128 rows of the pair's 256x256 result.
* Both blocks issue the TMA copies for the pair's whole window with
  `collective_axes="cluster"` and `partitioned_axis`: block i loads half i of
  the A rows (axis 0) and of the B columns (axis 1) into its own SMEM. Only the
  leader block's `loaded` barrier tracks both halves, so only it waits.
* Only the leader block (cluster index 0) issues the MMAs and the commit, with
  `collective_axis="cluster"`: their completions arrive on the `consumed` and
  `mma_done` barriers of *both* blocks, which is what lets the other block
  refill its SMEM and run its epilogue.
* Each block stores its own 128 rows of the pair's tile.

Tutorial numbers: 59.4% TensorCore utilisation (from 55.8%), 93.7% of cuBLAS.
"""
import tilegemm as tg

ARCH = "sm_100a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4, epilogue_tile_n=64)
SHAPES = {
    "verify": [(4096, 8192, 4096), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (264, 520, 328), (40, 24, 8)],
    "benchmark": (4096, 8192, 4096),
}
TMA_WARP, MMA_WARP = 0, 1


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4,
          epilogue_tile_n=64):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation; 2-CTA MMAs over (2 tile_m) x (2 tile_n) tiles."""
    cluster_tile_n = 2 * tile_n
    if cluster_tile_n % epilogue_tile_n:
        raise ValueError(f"2 * tile_n={cluster_tile_n} must be a multiple of epilogue_tile_n={epilogue_tile_n}")
    cluster_tile_m = 2 * tile_m
    k_iters = tg.cdiv(k, tile_k)
    stages = max_concurrent_steps
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        acc_tmem=tg.TMEM((tile_m, cluster_tile_n), tg.float32, collective=True),
        acc_smem=tg.SMEM((2, tile_m, epilogue_tile_n), dtype, transforms=tg.mma_transforms(epilogue_tile_n, dtype)),
        loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
        consumed=tg.Barrier(num_arrivals=1, num_barriers=stages, orders_tensor_core=True),
        mma_done=tg.Barrier(num_arrivals=1, num_barriers=1, orders_tensor_core=True),
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype),
               grid=(tg.cdiv(m, cluster_tile_m), tg.cdiv(n, cluster_tile_n)), grid_names=("m", "n"),
               cluster=(2,), cluster_names=("cluster",), scratch_shapes=scratch, name="blackwell_4_collective")
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done):
        block = tg.axis_index("cluster")               # 0: the leader, which issues the MMAs
        is_leader = block == 0
        mi, ni = tg.axis_index("m"), tg.axis_index("n")
        pair_rows = tg.ds(mi * cluster_tile_m, cluster_tile_m)
        n0 = ni * cluster_tile_n
        pair_cols = tg.ds(n0, cluster_tile_n)

        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _per_warp():
            warp = tg.axis_index("warp")

            @tg.when(warp == TMA_WARP)
            def _load():                               # both blocks: each loads its halves
                def load_step(ki, _):
                    slot = ki % stages

                    @tg.when(ki >= stages)
                    def _():
                        tg.barrier_wait(consumed.at[slot])     # the pair's MMA that read this slot is done
                    ks = tg.ds(ki * tile_k, tile_k)
                    tg.copy_gmem_to_smem(a.at[pair_rows, ks], a_smem.at[slot], loaded.at[slot],
                                         collective_axes="cluster", partitioned_axis=0)
                    tg.copy_gmem_to_smem(b.at[ks, pair_cols], b_smem.at[slot], loaded.at[slot],
                                         collective_axes="cluster", partitioned_axis=1)
                tg.fori_loop(0, k_iters, load_step, None)

            @tg.when((warp == MMA_WARP) & is_leader)
            def _mma():                                # the leader only: one MMA for the pair
                def mma_step(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(loaded.at[slot])   # both blocks' halves have landed
                    tg.tcgen05_mma(acc_tmem, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                   accumulate=ki > 0, collective_axis="cluster")
                tg.fori_loop(0, k_iters, mma_step, None)
                tg.tcgen05_commit_arrive(mma_done.at[0], collective_axis="cluster")

        tg.barrier_wait(mma_done.at[0])
        rows = tg.ds((mi * 2 + block) * tile_m, tile_m)    # this block's half of the pair's rows
        for j in range(cluster_tile_n // epilogue_tile_n):     # static: unrolled while tracing
            buf = acc_smem.at[j % 2]
            tg.wait_smem_to_gmem(1, wait_read_only=True)      # the store that last read `buf` is done
            part = tg.async_load_tmem(acc_tmem.at[:, j * epilogue_tile_n:(j + 1) * epilogue_tile_n])
            tg.wait_load_tmem()
            buf[...] = part.astype(dtype)
            tg.commit_smem()
            tg.copy_smem_to_gmem(buf, c.at[rows, tg.ds(n0 + j * epilogue_tile_n, epilogue_tile_n)])
        tg.wait_smem_to_gmem(0, wait_read_only=True)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
