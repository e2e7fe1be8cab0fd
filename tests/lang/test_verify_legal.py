"""Full-size kernels in the style of the Pallas Hopper and Blackwell matmuls verify without complaint."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, spec, swizzled


def hopper_warp_specialized(m, n, k, tile_m=128, tile_n=256, tile_k=64, stages=4):
    """One producer warpgroup streams A/B tiles by TMA; two consumers each own half of M."""
    half_m = tile_m // 2

    def body(a, b, out, a_smem, b_smem, acc, full, free):
        wg = tg.axis_index("wg")
        rows, cols = tg.axis_index("m") * tile_m, tg.axis_index("n") * tile_n

        @tg.when(wg == 2)
        def _producer():
            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)
                def _():
                    def load(ki, carry):
                        slot = ki % stages

                        @tg.when(ki >= stages)
                        def _():
                            tg.barrier_wait(free.at[slot])
                        tg.copy_gmem_to_smem(a.at[tg.ds(rows, tile_m), tg.ds(ki * tile_k, tile_k)], a_smem.at[slot],
                                             full.at[slot])
                        tg.copy_gmem_to_smem(b.at[tg.ds(ki * tile_k, tile_k), tg.ds(cols, tile_n)], b_smem.at[slot],
                                             full.at[slot])
                    tg.fori_loop(0, k // tile_k, load, None)

        @tg.when(wg < 2)
        def _consumer():
            def step(ki, carry):
                slot = ki % stages
                tg.barrier_wait(full.at[slot])
                tg.wgmma(acc, a_smem.at[slot, tg.ds(wg * half_m, half_m)], b_smem.at[slot])
                tg.wgmma_wait(0)
                tg.barrier_arrive(free.at[slot])
            tg.fori_loop(0, k // tile_k, step, None)
            out[tg.ds(rows + wg * half_m, half_m), tg.ds(cols, tile_n)] = acc[...].astype(F16)

    return tg.kernel(body, out_shape=spec(m, n), grid=(m // tile_m, n // tile_n), grid_names=("m", "n"),
                     num_threads=3, thread_name="wg",
                     scratch_shapes=[tg.SMEM((stages, tile_m, tile_k), F16, transforms=swizzled(128)),
                                     tg.SMEM((stages, tile_k, tile_n), F16, transforms=swizzled(128)),
                                     tg.ACC((half_m, tile_n)),
                                     tg.Barrier(num_arrivals=2, num_barriers=stages),
                                     tg.Barrier(num_arrivals=2, num_barriers=stages)])


def blackwell_two_cta(m, n, k, collective, tile_k=64, stages=4, epilogue_n=32):
    """The Pallas Blackwell matmul structure: TMA warp, MMA warp, epilogue warpgroup, optional 2-CTA pairs."""
    block_m = block_n = 128
    tile_m, tile_n = (2 * block_m, 2 * block_n) if collective else (block_m, block_n)
    m_iters, n_iters, k_iters = m // tile_m, n // tile_n, k // tile_k
    pair = "x" if collective else None

    def body(a, b, out, a_smem, b_smem, acc_tmem, acc_smem, loaded, stored, mma_done, consumed):
        wg, block = tg.axis_index("wg"), tg.axis_index("x")

        @tg.nd_loop((m_iters * n_iters,), collective_axes="mn")
        def _(info):
            m_index, n_index = tg.planar_snake(info.index[0], (m_iters, n_iters), 1, 4)
            slot_acc = info.local_index % 2
            acc = acc_tmem.at[:, tg.ds(slot_acc * tile_n, tile_n)]

            @tg.when(wg == 0)
            def _():
                @tg.core_map(tg.WarpMesh(axis_name="warp"))
                def _():
                    warp = tg.axis_index("warp")

                    @tg.when(warp == 0)
                    def _():
                        def load(ki, carry):
                            slot = ki % stages

                            @tg.when((ki >= stages) | (info.local_index > 0))
                            def _():
                                tg.barrier_wait(consumed.at[slot])
                            tg.copy_gmem_to_smem(a.at[tg.ds(m_index * tile_m, tile_m), tg.ds(ki * tile_k, tile_k)],
                                                 a_smem.at[slot], loaded.at[slot], collective_axes=pair,
                                                 partitioned_axis=0 if collective else None)
                            tg.copy_gmem_to_smem(b.at[tg.ds(ki * tile_k, tile_k), tg.ds(n_index * tile_n, tile_n)],
                                                 b_smem.at[slot], loaded.at[slot], collective_axes=pair,
                                                 partitioned_axis=1 if collective else None)
                        tg.fori_loop(0, k_iters, load, None)

                    @tg.when((warp == 1) & (block == 0))
                    def _():
                        def multiply(ki, carry):
                            slot = ki % stages
                            tg.barrier_wait(loaded.at[slot])
                            tg.tcgen05_mma(acc, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                           accumulate=ki > 0, collective_axis=pair)

                            @tg.when(ki == k_iters - 1)
                            def _():
                                tg.tcgen05_commit_arrive(mma_done.at[slot_acc], collective_axis=pair)
                        tg.fori_loop(0, k_iters, multiply, None)

            @tg.when(wg == 1)
            def _():
                tg.barrier_wait(mma_done.at[slot_acc])
                rows = tg.ds((m_index * (2 if collective else 1) + block) * block_m, block_m)
                for ni in range(tile_n // epilogue_n):
                    cols = tg.ds(ni * epilogue_n, epilogue_n)
                    acc_smem.at[ni % 2][...] = tg.async_load_tmem(acc.at[:, cols]).astype(F16)
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(acc_smem.at[ni % 2], out.at[rows, tg.ds(n_index * tile_n, tile_n)].at[:, cols])
                    tg.wait_smem_to_gmem(1, wait_read_only=True)
                tg.wait_load_tmem()
                tg.barrier_arrive(stored.at[slot_acc])

    stored = (tg.ClusterBarrier(collective_axes=("x",), num_barriers=2, orders_tensor_core=True) if collective
              else tg.Barrier(num_barriers=2, orders_tensor_core=True))
    return tg.kernel(body, out_shape=spec(m, n), grid=(m_iters * n_iters,), grid_names=("mn",), num_threads=2,
                     thread_name="wg", cluster=(2 if collective else 1,), cluster_names=("x",),
                     scratch_shapes=[tg.SMEM((stages, block_m, tile_k), F16, transforms=swizzled(128)),
                                     tg.SMEM((stages, tile_k, block_n), F16, transforms=swizzled(128)),
                                     tg.TMEM((block_m, 2 * tile_n), F32, collective=collective),
                                     tg.SMEM((2, block_m, epilogue_n), F16, transforms=swizzled(64)),
                                     tg.Barrier(num_arrivals=2, num_barriers=stages), stored,
                                     tg.Barrier(num_barriers=2, orders_tensor_core=True),
                                     tg.Barrier(num_barriers=stages, orders_tensor_core=True)])


def test_a_warp_specialized_hopper_matmul_verifies():
    graph = hopper_warp_specialized(512, 512, 256).trace(spec(512, 256), spec(256, 512))
    assert sum(op.kind == "wgmma" for op in graph.walk()) == 1


@pytest.mark.parametrize("collective", [False, True])
def test_a_persistent_blackwell_matmul_verifies(collective):
    graph = blackwell_two_cta(1024, 1024, 512, collective).trace(spec(1024, 512), spec(512, 1024))
    mma = next(op for op in graph.walk() if op.kind == "tcgen05_mma")
    assert mma.attrs["collective_axis"] == ("x" if collective else None)
