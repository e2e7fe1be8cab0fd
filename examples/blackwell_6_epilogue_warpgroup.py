"""Blackwell ladder 6 — dedicated epilogue warpgroup: the epilogue of tile t runs while tile t+1 computes.

In rung 5 the warpgroup that issues the MMAs also runs the epilogue, and the
tensor core idles meanwhile. Here the block has two warpgroups
(`num_threads=2`, `thread_name="wg"`): warpgroup 0 keeps the TMA and MMA warps
of rung 5; warpgroup 1 only moves results out (TMEM -> registers -> SMEM ->
GMEM). For both to work at once the TMEM accumulator is double-buffered:
tile t accumulates into half `t % 2` of a (tile_m, 2 x 2 * tile_n) allocation
(all 512 TMEM columns), and two barriers per half hand it back and forth:

* `mma_done[h]`: the leader's commit (to both blocks of the pair) says half h
  holds a finished tile; the epilogue warpgroup waits on it.
* `store_done[h]`: the epilogue warpgroup says it has read half h out. It is a
  ClusterBarrier over the pair: the leader's MMAs write both blocks' TMEM, so
  they may reuse half h only after *both* blocks' epilogues are done with it.
  The MMA warp waits on it from the third tile on (the first two find the
  halves unused). The other block's MMA warp waits on it too although it
  issues no MMA: the tutorial warns that arrivals on a barrier with no wait in
  between can trip hardware assertions.

Every role walks the tiles on its own: the `core_map` is entered once, and
inside it the TMA warp and the MMA warp each run their own tile loop, as does
the epilogue warpgroup. Nothing joins them at a tile boundary, so the TMA warp
runs ahead into the next tile as far as the ring of SMEM stages lets it (one
step counter runs on across tiles; a stage is refilled once the MMA that read
it is done). The ring is as deep as shared memory allows (`tg.max_stages`).

The epilogue stores `epilogue_tile_n`-column slices through a ring of
`epilogue_buffers` SMEM buffers that also runs on across tiles: before a
buffer is rewritten, `wait_smem_to_gmem(epilogue_buffers - 1,
wait_read_only=True)` makes sure the store that last read it is done.
Tutorial numbers: 63.4% TensorCore utilisation (from 61.5%), 100% of cuBLAS.
"""
import tilegemm as tg

ARCH = "sm_100a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=None, epilogue_tile_n=32, epilogue_buffers=4,
              num_clusters=None)
SHAPES = {
    "verify": [(4096, 8192, 4096), (2056, 3080, 1000)],
    "interpret": [(200, 136, 72), (264, 520, 328), (40, 24, 8)],
    "benchmark": (4096, 8192, 4096),
}
TMA_WARP, MMA_WARP = 0, 1
MMA_WG, STORE_WG = 0, 1
B200_CLUSTERS = tg.model.get_device("b200").sms // 2   # the default grid: one cluster per SM pair of a B200


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=None,
          epilogue_tile_n=32, epilogue_buffers=4, num_clusters=None):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation; persistent 2-CTA MMAs and an epilogue warpgroup.

    `num_clusters` (default: one per SM pair of a B200) sizes the persistent grid; on a GPU,
    `tilegemm.runtime.occupancy.max_active_clusters(compiled)` says how many clusters it can hold at once.
    `max_concurrent_steps` (default: as many as fit) is the depth of the SMEM ring.
    """
    cluster_tile_n = 2 * tile_n
    if cluster_tile_n % epilogue_tile_n:
        raise ValueError(f"2 * tile_n={cluster_tile_n} must be a multiple of epilogue_tile_n={epilogue_tile_n}")
    cluster_tile_m = 2 * tile_m
    m_iters, n_iters, k_iters = tg.cdiv(m, cluster_tile_m), tg.cdiv(n, cluster_tile_n), tg.cdiv(k, tile_k)
    num_clusters = min(num_clusters or B200_CLUSTERS, m_iters * n_iters)   # no idle clusters on small problems
    slices = cluster_tile_n // epilogue_tile_n

    def scratch(stages):
        return dict(
            a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
            b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
            acc_tmem=tg.TMEM((tile_m, 2 * cluster_tile_n), tg.float32, collective=True),   # two halves
            acc_smem=tg.SMEM((epilogue_buffers, tile_m, epilogue_tile_n), dtype,
                             transforms=tg.mma_transforms(epilogue_tile_n, dtype)),
            loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
            consumed=tg.Barrier(num_arrivals=1, num_barriers=stages, orders_tensor_core=True),
            mma_done=tg.Barrier(num_arrivals=1, num_barriers=2, orders_tensor_core=True),
            store_done=tg.ClusterBarrier(collective_axes=("cluster",), num_arrivals=1, num_barriers=2,
                                         orders_tensor_core=True),
        )
    stages = max_concurrent_steps or tg.max_stages(scratch)

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(num_clusters,), grid_names=("cluster_grid",),
               cluster=(2,), cluster_names=("cluster",), num_threads=2, thread_name="wg",
               scratch_shapes=scratch(stages), name="blackwell_6_epilogue_warpgroup")
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done, store_done):
        wg = tg.axis_index("wg")
        block = tg.axis_index("cluster")               # 0: the leader, which issues the MMAs
        is_leader = block == 0

        def tiles(body):
            """Runs body(mi, ni, t) for this cluster's tiles; t counts them from 0."""
            @tg.nd_loop((m_iters, n_iters), collective_axes="cluster_grid")
            def _(info):
                body(*info.index, info.local_index)

        def tmem_half(t):
            """(which half of acc_tmem tile t accumulates into, that half)."""
            half = t % 2
            return half, acc_tmem.at[:, tg.ds(half * cluster_tile_n, cluster_tile_n)]

        @tg.when(wg == MMA_WG)
        def _mma_wg():
            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _per_warp():
                warp = tg.axis_index("warp")

                @tg.when(warp == TMA_WARP)
                def _load():
                    def load_tile(mi, ni, t):
                        def load_step(ki, _):
                            step = t * k_iters + ki            # counts on across tiles
                            slot = step % stages

                            @tg.when(step >= stages)
                            def _():
                                tg.barrier_wait(consumed.at[slot])     # the MMA that read this slot is done
                            ks = tg.ds(ki * tile_k, tile_k)
                            tg.copy_gmem_to_smem(a.at[tg.ds(mi * cluster_tile_m, cluster_tile_m), ks],
                                                 a_smem.at[slot], loaded.at[slot],
                                                 collective_axes="cluster", partitioned_axis=0)
                            tg.copy_gmem_to_smem(b.at[ks, tg.ds(ni * cluster_tile_n, cluster_tile_n)],
                                                 b_smem.at[slot], loaded.at[slot],
                                                 collective_axes="cluster", partitioned_axis=1)
                        tg.fori_loop(0, k_iters, load_step, None)
                    tiles(load_tile)

                @tg.when(warp == MMA_WARP)
                def _mma():
                    def mma_tile(mi, ni, t):
                        half, acc = tmem_half(t)

                        @tg.when(t >= 2)
                        def _():
                            tg.barrier_wait(store_done.at[half])   # both epilogues have read this half out

                        @tg.when(is_leader)
                        def _():
                            def mma_step(ki, _):
                                slot = (t * k_iters + ki) % stages
                                tg.barrier_wait(loaded.at[slot])
                                tg.tcgen05_mma(acc, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                               accumulate=ki > 0, collective_axis="cluster")
                            tg.fori_loop(0, k_iters, mma_step, None)
                            tg.tcgen05_commit_arrive(mma_done.at[half], collective_axis="cluster")
                    tiles(mma_tile)

        @tg.when(wg == STORE_WG)
        def _store_wg():
            def store_tile(mi, ni, t):
                half, acc = tmem_half(t)
                tg.barrier_wait(mma_done.at[half])
                rows = tg.ds((mi * 2 + block) * tile_m, tile_m)
                for j in range(slices):                                 # static: unrolled while tracing
                    buf = acc_smem.at[(t * slices + j) % epilogue_buffers]   # the ring runs on across tiles
                    tg.wait_smem_to_gmem(epilogue_buffers - 1, wait_read_only=True)  # `buf`'s last store read it
                    part = tg.async_load_tmem(acc.at[:, j * epilogue_tile_n:(j + 1) * epilogue_tile_n])
                    tg.wait_load_tmem()
                    buf[...] = part.astype(dtype)
                    tg.commit_smem()
                    cols = tg.ds(ni * cluster_tile_n + j * epilogue_tile_n, epilogue_tile_n)
                    tg.copy_smem_to_gmem(buf, c.at[rows, cols])
                tg.barrier_arrive(store_done.at[half])            # this block is done with the TMEM half
            tiles(store_tile)
            tg.wait_smem_to_gmem(0, wait_read_only=True)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
