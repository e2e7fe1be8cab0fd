"""The Hopper flagship kernel (behind tg.matmul): a persistent, warp-specialized 128x256 GEMM with a TMA-store epilogue.

What v4 lacks and this kernel adds (the levers of seeds/000's "SOTA" section):

* Persistence: the grid is one block per SM; `tg.nd_loop` deals output tiles
  round-robin to blocks, so block start-up is paid once and the producer
  loads the next tile's first stages while the consumers store this one.
* Rasterisation: `tg.planar_snake` walks tiles in bands of `grid_tile_width`
  along one dimension, so blocks running at the same time share A/B panels in L2.
* Deeper pipelining: the K loop keeps one WGMMA group in flight
  (`wgmma_wait(1)`) and releases each SMEM stage one step late, so the tensor
  cores never wait for the release of the stage they just read.
* A sub-tiled, double-buffered epilogue: each consumer writes 64x64 slices of
  its accumulator into a swizzled SMEM buffer (bank-conflict-free register
  stores) and stores them with TMA while writing the next; the stores of the
  last slices drain during the next tile's main loop.
* Optional clusters (`cluster_m=2`): the blocks of a cluster compute vertically
  adjacent tiles sharing one B tile; each fetches half of it and TMA
  multicasts it to both, halving B's L2 traffic, and the `empty`
  ClusterBarrier frees a stage only once every block's consumers released it.
  On the H200 this measured no faster at 8192^3 and slower at 2048^3, so the
  default is 1 (a cluster of one block, plain TMA).

Roles (num_threads=3): warpgroups 0 and 1 are consumers, each owning 64 rows of
the 128-row block tile; warpgroup 2 is the TMA producer, of which one warp runs
the load loop (`core_map`) while the other three sleep at its exit instead of
polling the barriers (worth ~3% on the H200). Registers are moved from the
producer (40) to the consumers (232) with setmaxnreg.
"""
from .. import lang as tg
from ..kernel import kernel

CONFIG = dict(tile_m=128, tile_n=256, tile_k=64, stages=4, epi_tile_n=64, cluster_m=1, grid_minor_dim=0,
              grid_tile_width=8, num_sms=132)
CONSUMERS = 2
PRODUCER = 2  # warpgroup index of the TMA producer


def build(m, n, k, dtype=tg.float16, tile_m=128, tile_n=256, tile_k=64, stages=4, epi_tile_n=64, cluster_m=1,
          grid_minor_dim=0, grid_tile_width=8, num_sms=132):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation, as a persistent warp-specialized kernel."""
    rows = tile_m // CONSUMERS           # output rows per consumer warpgroup
    m_tiles, n_tiles, k_steps = tg.cdiv(m, tile_m), tg.cdiv(n, tile_n), tg.cdiv(k, tile_k)
    m_groups = tg.cdiv(m_tiles, cluster_m)  # a cluster computes cluster_m vertically adjacent tiles
    num_clusters = min(num_sms // cluster_m, m_groups * n_tiles)
    b_multicast = ("cm",) if cluster_m > 1 else ()  # the cluster axis B tiles are multicast along

    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        out_smem=tg.SMEM((CONSUMERS, 2, rows, epi_tile_n), dtype, transforms=tg.mma_transforms(epi_tile_n, dtype)),
        acc=tg.ACC((rows, tile_n), tg.float32),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),             # A and B landed in a stage
        empty=tg.ClusterBarrier(collective_axes="cm", num_arrivals=CONSUMERS,  # every block's consumers
                                num_barriers=stages),                           # are done with it
    )

    @kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(num_clusters,), grid_names=("cluster",),
            cluster=(cluster_m,), cluster_names=("cm",), num_threads=CONSUMERS + 1, thread_name="wg",
            scratch_shapes=scratch, name="hopper_flagship")
    def matmul(a, b, c, a_smem, b_smem, out_smem, acc, full, empty):
        wg = tg.axis_index("wg")

        def tiles(body):
            """Runs body(m_idx, n_idx, first_step) for each output tile this block owns."""
            @tg.nd_loop((m_groups * n_tiles,), collective_axes="cluster")
            def _(info):
                (lin,) = info.index
                m_group, n_idx = tg.planar_snake(lin, (m_groups, n_tiles), grid_minor_dim, grid_tile_width)
                body(m_group * cluster_m + tg.axis_index("cm"), n_idx, info.local_index * k_steps)

        @tg.when(wg == PRODUCER)
        def _producer():
            tg.set_max_registers(40, action="decrease")

            def load_tile(m_idx, n_idx, first_step):
                def load_step(ki, _):
                    step = first_step + ki
                    slot = step % stages

                    @tg.when(step >= stages)
                    def _():
                        tg.barrier_wait(empty.at[slot])        # every consumer of the cluster released it
                    ks = tg.ds(ki * tile_k, tile_k)
                    tg.copy_gmem_to_smem(a.at[tg.ds(m_idx * tile_m, tile_m), ks], a_smem.at[slot], full.at[slot])
                    tg.copy_gmem_to_smem(b.at[ks, tg.ds(n_idx * tile_n, tile_n)], b_smem.at[slot], full.at[slot],
                                         collective_axes=b_multicast)
                tg.fori_loop(0, k_steps, load_step, None)

            @tg.core_map(tg.WarpMesh("warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)   # one warp issues every copy; the other three sleep
                def _():
                    tiles(load_tile)

        @tg.when(wg < CONSUMERS)
        def _consumer():
            tg.set_max_registers(232, action="increase")

            def compute_tile(m_idx, n_idx, first_step):
                acc[...] = tg.zeros((rows, tile_n), tg.float32)

                def mma_step(ki, _):
                    step = first_step + ki
                    slot = step % stages
                    tg.barrier_wait(full.at[slot])
                    tg.wgmma(acc, a_smem.at[slot].at[tg.ds(wg * rows, rows)], b_smem.at[slot])
                    tg.wgmma_wait(1)                          # the previous step's MMA is done ...

                    @tg.when(ki > 0)
                    def _():
                        tg.barrier_arrive(empty.at[(step - 1) % stages])   # ... so release its stage
                tg.fori_loop(0, k_steps, mma_step, None)
                tg.wgmma_wait(0)
                tg.barrier_arrive(empty.at[(first_step + k_steps - 1) % stages])

                out = acc[...].astype(dtype)
                row0 = m_idx * tile_m + wg * rows
                for j in range(tile_n // epi_tile_n):           # static: unrolled at trace time
                    buf = out_smem.at[wg, j % 2]
                    tg.wait_smem_to_gmem(1, wait_read_only=True)  # the store that last read `buf` is done
                    buf[...] = out[:, j * epi_tile_n:(j + 1) * epi_tile_n]
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(buf, c.at[tg.ds(row0, rows), tg.ds(n_idx * tile_n + j * epi_tile_n,
                                                                            epi_tile_n)])
            tiles(compute_tile)
            tg.wait_smem_to_gmem(0)

    return matmul
