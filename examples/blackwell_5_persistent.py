"""Blackwell ladder 5 — persistent kernel: one cluster per SM pair loops over many output tiles.

Rung 4 launches one cluster per output tile. Here the grid is only as large as
what runs at once — `num_clusters` clusters of 2 blocks — and every cluster
walks a share of the tiles: `tg.nd_loop((m_iters * n_iters,),
collective_axes="cluster_grid")` deals the tiles round-robin over the
clusters (it is a `fori_loop` over this cluster's tiles). Block set-up
(barrier initialisation, TMEM allocation) is paid once per SM, and the TMA
stores of one tile's epilogue drain while the next tile's loads start.

The barriers carry over from tile to tile:

* One step counter runs on across tiles (`step = t * k_iters + ki` for the
  t-th tile of this cluster), so the ring of SMEM stages is used round and
  round; the TMA warp skips its wait on `consumed` only while the ring has
  never been used (`step < stages`). The ring is as deep as shared memory
  allows (`tg.max_stages`).
* The whole warpgroup runs the epilogue (each warp reads its quarter of the
  TMEM lanes), so the warps meet at the end of the `core_map` every tile. So
  that the loads do not stall there, the TMA warp loads the *next* tile's
  first `min(stages, k_iters)` steps before it leaves the `core_map`: they
  land while this tile's epilogue runs, and the next tile's MMAs start at
  once. (Tile 0's first steps are loaded at the start of tile 0.)
* The leader's MMAs write both blocks' TMEM, so the next tile's MMAs must wait
  until *both* blocks have read the accumulator out: each block's warpgroup
  arrives on `acc_free`, a ClusterBarrier over the pair, after its epilogue's
  TMEM loads, and the MMA warps wait on it from the second tile on (the other
  block's too, as in rung 6: arrivals with no wait in between can trip
  hardware assertions).

`num_clusters` defaults to one per SM pair of a B200; on a GPU,
`tilegemm.runtime.occupancy.max_active_clusters(compiled)` says how many clusters of the
compiled kernel the GPU holds at once. Tutorial numbers: 61.5% TensorCore
utilisation (from 59.4%), 97.0% of cuBLAS.
"""
import tilegemm as tg

ARCH = "sm_100a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=None, epilogue_tile_n=64, num_clusters=None)
SHAPES = {
    "verify": [(4096, 8192, 4096), (2056, 3080, 1000)],
    "interpret": [(200, 136, 72), (264, 520, 328), (40, 24, 8)],
    "benchmark": (4096, 8192, 4096),
}
TMA_WARP, MMA_WARP = 0, 1
B200_CLUSTERS = tg.model.get_device("b200").sms // 2   # the default grid: one cluster per SM pair of a B200


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=None,
          epilogue_tile_n=64, num_clusters=None):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation; persistent 2-CTA clusters.

    `num_clusters` (default: one per SM pair of a B200) sizes the persistent grid;
    `max_concurrent_steps` (default: as many as fit) is the depth of the SMEM ring.
    """
    cluster_tile_n = 2 * tile_n
    if cluster_tile_n % epilogue_tile_n:
        raise ValueError(f"2 * tile_n={cluster_tile_n} must be a multiple of epilogue_tile_n={epilogue_tile_n}")
    cluster_tile_m = 2 * tile_m
    m_iters, n_iters, k_iters = tg.cdiv(m, cluster_tile_m), tg.cdiv(n, cluster_tile_n), tg.cdiv(k, tile_k)
    num_clusters = min(num_clusters or B200_CLUSTERS, m_iters * n_iters)   # no idle clusters on small problems

    def scratch(stages):
        return dict(
            a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
            b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
            acc_tmem=tg.TMEM((tile_m, cluster_tile_n), tg.float32, collective=True),
            acc_smem=tg.SMEM((2, tile_m, epilogue_tile_n), dtype,
                             transforms=tg.mma_transforms(epilogue_tile_n, dtype)),
            loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
            consumed=tg.Barrier(num_arrivals=1, num_barriers=stages, orders_tensor_core=True),
            mma_done=tg.Barrier(num_arrivals=1, num_barriers=1, orders_tensor_core=True),
            acc_free=tg.ClusterBarrier(collective_axes=("cluster",), orders_tensor_core=True),
        )
    stages = max_concurrent_steps or tg.max_stages(scratch)
    ahead = min(stages, k_iters)   # K steps of the next tile loaded before this tile's epilogue
    slices = cluster_tile_n // epilogue_tile_n

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(num_clusters,), grid_names=("cluster_grid",),
               cluster=(2,), cluster_names=("cluster",), scratch_shapes=scratch(stages),
               name="blackwell_5_persistent")
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done, acc_free):
        block = tg.axis_index("cluster")               # 0: the leader, which issues the MMAs
        is_leader = block == 0

        def load_steps(lin, t, first, last):
            """Loads K steps [first, last) of tile `lin` (this cluster's t-th) into the ring."""
            pair_rows = tg.ds(lin // n_iters * cluster_tile_m, cluster_tile_m)
            pair_cols = tg.ds(lin % n_iters * cluster_tile_n, cluster_tile_n)

            def load_step(ki, _):
                step = t * k_iters + ki                # counts on across tiles
                slot = step % stages

                @tg.when(step >= stages)
                def _():
                    tg.barrier_wait(consumed.at[slot])     # the MMA that read this slot is done
                ks = tg.ds(ki * tile_k, tile_k)
                tg.copy_gmem_to_smem(a.at[pair_rows, ks], a_smem.at[slot], loaded.at[slot],
                                     collective_axes="cluster", partitioned_axis=0)
                tg.copy_gmem_to_smem(b.at[ks, pair_cols], b_smem.at[slot], loaded.at[slot],
                                     collective_axes="cluster", partitioned_axis=1)
            tg.fori_loop(first, last, load_step, None)

        @tg.nd_loop((m_iters * n_iters,), collective_axes="cluster_grid")
        def _tile(info):
            (lin,) = info.index
            t = info.local_index
            mi, ni = lin // n_iters, lin % n_iters

            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _per_warp():
                warp = tg.axis_index("warp")

                @tg.when(warp == TMA_WARP)
                def _load():
                    @tg.when(t == 0)
                    def _():
                        load_steps(lin, t, 0, ahead)           # later tiles' first steps are already loaded
                    if ahead < k_iters:
                        load_steps(lin, t, ahead, k_iters)

                    @tg.when(t + 1 < info.num_local_steps)
                    def _():                                   # run ahead: they land during the epilogue
                        load_steps(lin + num_clusters, t + 1, 0, ahead)

                @tg.when(warp == MMA_WARP)
                def _mma():
                    @tg.when(t > 0)
                    def _():
                        tg.barrier_wait(acc_free.at[0])        # both blocks have read the last tile out of TMEM

                    @tg.when(is_leader)
                    def _():
                        def mma_step(ki, _):
                            slot = (t * k_iters + ki) % stages
                            tg.barrier_wait(loaded.at[slot])
                            tg.tcgen05_mma(acc_tmem, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                           accumulate=ki > 0, collective_axis="cluster")
                        tg.fori_loop(0, k_iters, mma_step, None)
                        tg.tcgen05_commit_arrive(mma_done.at[0], collective_axis="cluster")

            tg.barrier_wait(mma_done.at[0])
            rows = tg.ds((mi * 2 + block) * tile_m, tile_m)
            for j in range(slices):                               # static: unrolled while tracing
                buf = acc_smem.at[(t * slices + j) % 2]           # the two buffers alternate across tiles too
                tg.wait_smem_to_gmem(1, wait_read_only=True)      # the store that last read `buf` is done
                part = tg.async_load_tmem(acc_tmem.at[:, j * epilogue_tile_n:(j + 1) * epilogue_tile_n])
                tg.wait_load_tmem()
                buf[...] = part.astype(dtype)
                tg.commit_smem()
                tg.copy_smem_to_gmem(buf, c.at[rows, tg.ds(ni * cluster_tile_n + j * epilogue_tile_n,
                                                           epilogue_tile_n)])
            tg.barrier_arrive(acc_free.at[0])                     # this block's TMEM reads are done
        tg.wait_smem_to_gmem(0, wait_read_only=True)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
