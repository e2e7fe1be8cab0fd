"""Blackwell ladder 5 — persistent kernel: one cluster per SM pair loops over many output tiles.

Rung 4 launches one cluster per output tile. Here the grid is only as large as
what runs at once — `num_sms // 2` clusters of 2 blocks — and every cluster
walks a share of the tiles: `tg.nd_loop((m_iters, n_iters),
collective_axes="cluster_grid")` deals the tiles round-robin over the
clusters (it is a `fori_loop` over this cluster's tiles). Block set-up
(barrier initialisation, TMEM allocation) is paid once per SM, and the TMA
stores of one tile's epilogue drain while the next tile's loads start.

Two protocol changes make the barriers carry over from tile to tile:

* The TMA warp may skip its wait on `consumed` only while the ring has never
  been used: for the first `max_concurrent_steps` loads of the *first* tile
  (`info.local_index == 0`). Later tiles refill slots the previous tile's MMAs
  read. Every wait still pairs with the next completion of its barrier, since
  each warp counts the phases of the barriers it waits on.
* The epilogue finishes its TMEM loads (`wait_load_tmem`) before the next
  tile's MMAs overwrite the accumulator. In the pair the leader's MMAs also
  write the other block's TMEM; they cannot start before that block has
  finished its epilogue, because they need the operand halves that block loads
  only after it.

`num_sms` is the device's SM count (148 on a B200). Tutorial numbers: 61.5%
TensorCore utilisation (from 59.4%), 97.0% of cuBLAS.
"""
import tilegemm as tg

ARCH = "sm_100a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4, epilogue_tile_n=64, num_sms=148)
SHAPES = {
    "verify": [(4096, 8192, 4096), (2056, 3080, 1000)],
    "interpret": [(200, 136, 72), (264, 520, 328), (40, 24, 8)],
    "benchmark": (4096, 8192, 4096),
}
TMA_WARP, MMA_WARP = 0, 1


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4,
          epilogue_tile_n=64, num_sms=148):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation; persistent 2-CTA clusters, num_sms // 2 of them."""
    cluster_tile_n = 2 * tile_n
    if cluster_tile_n % epilogue_tile_n:
        raise ValueError(f"2 * tile_n={cluster_tile_n} must be a multiple of epilogue_tile_n={epilogue_tile_n}")
    cluster_tile_m = 2 * tile_m
    m_iters, n_iters, k_iters = tg.cdiv(m, cluster_tile_m), tg.cdiv(n, cluster_tile_n), tg.cdiv(k, tile_k)
    num_clusters = min(num_sms // 2, m_iters * n_iters)   # no idle clusters on small problems
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
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(num_clusters,), grid_names=("cluster_grid",),
               cluster=(2,), cluster_names=("cluster",), scratch_shapes=scratch, name="blackwell_5_persistent")
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done):
        block = tg.axis_index("cluster")               # 0: the leader, which issues the MMAs
        is_leader = block == 0

        @tg.nd_loop((m_iters, n_iters), collective_axes="cluster_grid")
        def _tile(info):
            mi, ni = info.index
            pair_rows = tg.ds(mi * cluster_tile_m, cluster_tile_m)
            n0 = ni * cluster_tile_n
            pair_cols = tg.ds(n0, cluster_tile_n)

            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _per_warp():
                warp = tg.axis_index("warp")

                @tg.when(warp == TMA_WARP)
                def _load():
                    def load_step(ki, _):
                        slot = ki % stages

                        @tg.when((ki >= stages) | (info.local_index > 0))
                        def _():
                            tg.barrier_wait(consumed.at[slot])     # the MMA that read this slot is done
                        ks = tg.ds(ki * tile_k, tile_k)
                        tg.copy_gmem_to_smem(a.at[pair_rows, ks], a_smem.at[slot], loaded.at[slot],
                                             collective_axes="cluster", partitioned_axis=0)
                        tg.copy_gmem_to_smem(b.at[ks, pair_cols], b_smem.at[slot], loaded.at[slot],
                                             collective_axes="cluster", partitioned_axis=1)
                    tg.fori_loop(0, k_iters, load_step, None)

                @tg.when((warp == MMA_WARP) & is_leader)
                def _mma():
                    def mma_step(ki, _):
                        slot = ki % stages
                        tg.barrier_wait(loaded.at[slot])
                        tg.tcgen05_mma(acc_tmem, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                       accumulate=ki > 0, collective_axis="cluster")
                    tg.fori_loop(0, k_iters, mma_step, None)
                    tg.tcgen05_commit_arrive(mma_done.at[0], collective_axis="cluster")

            tg.barrier_wait(mma_done.at[0])
            rows = tg.ds((mi * 2 + block) * tile_m, tile_m)
            for j in range(cluster_tile_n // epilogue_tile_n):     # static: unrolled while tracing
                buf = acc_smem.at[j % 2]
                tg.wait_smem_to_gmem(1, wait_read_only=True)      # the store that last read `buf` is done
                part = tg.async_load_tmem(acc_tmem.at[:, j * epilogue_tile_n:(j + 1) * epilogue_tile_n])
                tg.wait_load_tmem()                               # TMEM read before the next tile's MMAs
                buf[...] = part.astype(dtype)
                tg.commit_smem()
                tg.copy_smem_to_gmem(buf, c.at[rows, tg.ds(n0 + j * epilogue_tile_n, epilogue_tile_n)])
            tg.wait_smem_to_gmem(0, wait_read_only=True)          # acc_smem is free for the next tile
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
