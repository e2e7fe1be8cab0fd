"""Matmul kernels the interpreter tests run: the ladder's building blocks at test size.

Each builder takes switches that break one step of the kernel's
synchronisation protocol, so that the tests can check the interpreter catches
exactly that mistake. Lines the tests point at carry a `# line: <name>` marker
(see `line_of`).
"""
import os

import tilegemm as tg
from tilegemm.model.layouts import stored


def line_of(name, path=__file__):
    """The line number in file `path` (default: this file) of the statement marked `# line: <name>`."""
    with open(path) as f:
        (number,) = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# line: {name}")]
    return number


def at_line(name, path=__file__):
    """'<path>:<n>' of the marked line as error messages print it: relative to the working directory if below it."""
    relative = os.path.relpath(path)
    return f"{path if relative.startswith('..') else relative}:{line_of(name, path)}"


def pipelined_matmul(m, n, k, *, tile_m=64, tile_n=64, tile_k=64, stages=2, dtype=tg.float16, epilogue_n=None,
                     arrivals=2, wait="implicit", retire=True, fence=True, epilogue_wait=True, a_layout="mk",
                     b_layout="kn"):
    """One warpgroup per block: a ring of `stages` TMA stages feeding wgmma, and a TMA-store epilogue.

    Switches: `arrivals` (the barrier's num_arrivals; 2 copies arrive per step),
    `wait` ("implicit", "explicit" parity, "wrong" parity, or None: no wait),
    `retire` (wgmma_wait after each step), `fence` (commit_smem before each
    store), `epilogue_wait` (wait for the store reading the epilogue buffer
    before refilling it). The epilogue goes through one (tile_m, epilogue_n) buffer.
    `a_layout` "km" takes a as A.T [k, m], `b_layout` "nk" b as B.T [n, k]: their tiles
    are stored that way and wgmma reads them through tg.transpose_ref.
    """
    steps = tg.cdiv(k, tile_k)
    epilogue_n = epilogue_n or tile_n
    a_tile, b_tile = stored(a_layout, tile_m, tile_k), stored(b_layout, tile_n, tile_k)

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM((stages, *a_tile), dtype,
                                                  transforms=tg.mma_transforms(a_tile[1], dtype)),
                                   b_smem=tg.SMEM((stages, *b_tile), dtype,
                                                  transforms=tg.mma_transforms(b_tile[1], dtype)),
                                   out_smem=tg.SMEM((tile_m, epilogue_n), dtype),
                                   loaded=tg.Barrier(num_arrivals=arrivals, num_barriers=stages),
                                   acc=tg.ACC((tile_m, tile_n))))
    def matmul(a, b, c, a_smem, b_smem, out_smem, loaded, acc):
        mi, ni = tg.axis_index("m"), tg.axis_index("n")

        def fetch(step, slot):
            ks = tg.ds(step * tile_k, tile_k)
            a_tile = a.at[stored(a_layout, tg.ds(mi * tile_m, tile_m), ks)]
            b_tile = b.at[stored(b_layout, tg.ds(ni * tile_n, tile_n), ks)]
            tg.copy_gmem_to_smem(a_tile, a_smem.at[slot], loaded.at[slot])  # line: copy a
            tg.copy_gmem_to_smem(b_tile, b_smem.at[slot], loaded.at[slot])  # line: copy b

        def operands(slot):
            """The stage's tiles as wgmma reads them: A (M, K) and B (K, N)."""
            a_op, b_op = a_smem.at[slot], b_smem.at[slot]
            return a_op if a_layout == "mk" else a_op.T, b_op if b_layout == "kn" else b_op.T

        for step in range(min(stages, steps)):
            fetch(step, step)

        def step_body(step, _):
            slot = step % stages
            use = step // stages
            if wait == "implicit":
                tg.barrier_wait(loaded.at[slot])  # line: wait
            elif wait == "explicit":
                tg.barrier_wait(loaded.at[slot], phase=use % 2)
            elif wait == "wrong":
                tg.barrier_wait(loaded.at[slot], phase=(use + 1) % 2)
            tg.wgmma(acc, *operands(slot))  # line: wgmma
            if retire:
                tg.wgmma_wait(0)

            @tg.when(step + stages < steps)
            def _():
                fetch(step + stages, slot)
        tg.fori_loop(0, steps, step_body, None)

        out = acc[...].astype(dtype)  # line: read acc
        for j in range(tile_n // epilogue_n):
            if j and epilogue_wait:
                tg.wait_smem_to_gmem(0, wait_read_only=True)
            out_smem[...] = out[:, j * epilogue_n:(j + 1) * epilogue_n]  # line: epilogue store
            if fence:
                tg.commit_smem()
            out_tile = c.at[tg.ds(mi * tile_m, tile_m), tg.ds(ni * tile_n + j * epilogue_n, epilogue_n)]
            tg.copy_smem_to_gmem(out_smem, out_tile)  # line: tma store
        tg.wait_smem_to_gmem(0)
    return matmul


def warp_specialized_matmul(m, n, k, *, tile_m=128, tile_n=256, tile_k=64, stages=4, dtype=tg.float16,
                            multicast=False, release=True, cluster_release=True, epilogue_n=64):
    """Hopper warp specialization: a producer warpgroup feeds two consumer warpgroups (64 rows each).

    The producer waits on `consumed[slot]` before refilling a stage (unless
    `release=False`). With `multicast`, clusters of 2 blocks along n share the
    A tile: each block fetches half of it for both, and `consumed` is a
    ClusterBarrier, since a refill writes into both blocks (a plain Barrier,
    which only counts the block's own consumers, with `cluster_release=False`).
    """
    steps = tg.cdiv(k, tile_k)
    consumers = tile_m // 64
    cluster = dict(cluster=(2,), cluster_names=("cn",)) if multicast else {}
    n_tiles = tg.cdiv(n, tile_n)
    grid_n = tg.cdiv(n_tiles, 2) if multicast else n_tiles
    consumed = (tg.ClusterBarrier(collective_axes="cn", num_arrivals=consumers, num_barriers=stages)
                if multicast and cluster_release else tg.Barrier(num_arrivals=consumers, num_barriers=stages))

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), grid_n), grid_names=("m", "n"),
               num_threads=consumers + 1, thread_name="wg", **cluster,
               scratch_shapes=dict(a_smem=tg.SMEM((stages, tile_m, tile_k), dtype,
                                                  transforms=tg.mma_transforms(tile_k, dtype)),
                                   b_smem=tg.SMEM((stages, tile_k, tile_n), dtype,
                                                  transforms=tg.mma_transforms(tile_n, dtype)),
                                   out_smem=tg.SMEM((consumers, 64, epilogue_n), dtype),
                                   loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
                                   consumed=consumed))
    def matmul(a, b, c, a_smem, b_smem, out_smem, loaded, consumed):
        wg = tg.axis_index("wg")
        mi = tg.axis_index("m")
        ni = tg.axis_index("n") * 2 + tg.axis_index("cn") if multicast else tg.axis_index("n")

        @tg.when(wg == consumers)
        def _producer():
            tg.set_max_registers(40, action="decrease")

            def fetch(step, _):
                slot = step % stages
                if release:
                    @tg.when(step >= stages)
                    def _():
                        tg.barrier_wait(consumed.at[slot])
                a_tile = a.at[tg.ds(mi * tile_m, tile_m), tg.ds(step * tile_k, tile_k)]
                shared = "cn" if multicast else None  # multicast: both blocks of a cluster get the A tile
                tg.copy_gmem_to_smem(a_tile, a_smem.at[slot], loaded.at[slot], collective_axes=shared)  # line: ws a
                tg.copy_gmem_to_smem(b.at[tg.ds(step * tile_k, tile_k), tg.ds(ni * tile_n, tile_n)],
                                     b_smem.at[slot], loaded.at[slot])
            tg.fori_loop(0, steps, fetch, None)

        @tg.when(wg < consumers)
        def _consumer():
            tg.set_max_registers(232, action="increase")

            def scoped(acc):
                def step_body(step, _):
                    slot = step % stages
                    tg.barrier_wait(loaded.at[slot])
                    tg.wgmma(acc, a_smem.at[slot, tg.ds(wg * 64, 64)], b_smem.at[slot])  # line: ws wgmma
                    tg.wgmma_wait(0)

                    @tg.when(step + stages < steps)
                    def _():
                        tg.barrier_arrive(consumed.at[slot])
                tg.fori_loop(0, steps, step_body, None)
                out = acc[...].astype(dtype)
                for j in range(tile_n // epilogue_n):
                    tg.wait_smem_to_gmem(0, wait_read_only=True)
                    out_smem[wg] = out[:, j * epilogue_n:(j + 1) * epilogue_n]
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(out_smem.at[wg],
                                         c.at[tg.ds(mi * tile_m + wg * 64, 64),
                                              tg.ds(ni * tile_n + j * epilogue_n, epilogue_n)])
                tg.wait_smem_to_gmem(0)
            tg.run_scoped(scoped, tg.ACC((64, tile_n)))
    return matmul


def blackwell_matmul(m, n, k, *, block_m=128, block_n=64, tile_k=64, stages=2, dtype=tg.float16, collective=False,
                     blocks=2, epilogue_n=64, release_tmem_early=False, final_store_wait=True):
    """Blackwell, after Pallas's blackwell_matmul: per block, warp 0 issues TMA, warp 1 tcgen05 MMAs, and a
    second warpgroup stores results from TMEM; persistent over tiles with a double-buffered accumulator.

    With `collective`, 2-block clusters run 2-CTA MMAs: each block loads half of
    the A and B tiles (partitioned copies), the leader issues the MMAs, and
    both blocks store their half of the output rows. `blocks` clusters share
    the tiles round-robin (nd_loop).

    Switches: `release_tmem_early` (the store warpgroup signals `store_done`
    after its last TMEM load is issued but before `wait_load_tmem`),
    `final_store_wait` (it waits for its last TMA stores before the kernel ends).
    """
    pair = 2 if collective else 1
    tile_m, tile_n = block_m * pair, block_n * pair
    m_iters, n_iters, steps = tg.cdiv(m, tile_m), tg.cdiv(n, tile_n), tg.cdiv(k, tile_k)
    cluster = dict(cluster=(2,), cluster_names=("x",)) if collective else {}
    axis = "x" if collective else None
    store_done = (tg.ClusterBarrier(collective_axes="x", num_arrivals=1, num_barriers=2, orders_tensor_core=True)
                  if collective else tg.Barrier(num_arrivals=1, num_barriers=2, orders_tensor_core=True))

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(blocks,), grid_names=("sm",), num_threads=2,
               thread_name="wg", **cluster,
               scratch_shapes=dict(a_smem=tg.SMEM((stages, block_m, tile_k), dtype,
                                                  transforms=tg.mma_transforms(tile_k, dtype)),
                                   b_smem=tg.SMEM((stages, tile_k, block_n), dtype,
                                                  transforms=tg.mma_transforms(block_n, dtype)),
                                   acc_tmem=tg.TMEM((block_m, 2 * tile_n), tg.float32, collective=collective),
                                   acc_smem=tg.SMEM((2, block_m, epilogue_n), dtype),
                                   loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
                                   consumed=tg.Barrier(num_arrivals=1, num_barriers=stages,
                                                       orders_tensor_core=True),
                                   mma_done=tg.Barrier(num_arrivals=1, num_barriers=2, orders_tensor_core=True),
                                   store_done=store_done))
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done, store_done):
        wg = tg.axis_index("wg")
        rank = tg.axis_index("x") if collective else 0

        @tg.nd_loop((m_iters * n_iters,), collective_axes="sm")
        def _tile(info):
            (lin,) = info.index
            mi, ni = tg.planar_snake(lin, (m_iters, n_iters), 1, 2)
            acc_slot = info.local_index % 2
            acc = acc_tmem.at[:, tg.ds(acc_slot * tile_n, tile_n)]

            @tg.when(wg == 0)
            def _issue():
                @tg.core_map(tg.WarpMesh(axis_name="warp"))
                def _per_warp():
                    warp = tg.axis_index("warp")

                    @tg.when(warp == 0)
                    def _tma():
                        def fetch(ki, _):
                            slot = ki % stages

                            @tg.when((ki >= stages) | (info.local_index > 0))
                            def _():
                                tg.barrier_wait(consumed.at[slot])
                            tg.copy_gmem_to_smem(a.at[tg.ds(mi * tile_m, tile_m), tg.ds(ki * tile_k, tile_k)],
                                                 a_smem.at[slot], loaded.at[slot], collective_axes=axis,
                                                 partitioned_axis=0 if collective else None)
                            tg.copy_gmem_to_smem(b.at[tg.ds(ki * tile_k, tile_k), tg.ds(ni * tile_n, tile_n)],
                                                 b_smem.at[slot], loaded.at[slot], collective_axes=axis,
                                                 partitioned_axis=1 if collective else None)
                        tg.fori_loop(0, steps, fetch, None)

                    @tg.when((warp == 1) & (info.local_index > 1))
                    def _():
                        tg.barrier_wait(store_done.at[acc_slot])

                    @tg.when((warp == 1) & (rank == 0))
                    def _mma():
                        def multiply(ki, _):
                            slot = ki % stages
                            tg.barrier_wait(loaded.at[slot])
                            tg.tcgen05_mma(acc, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],  # line: tcgen05
                                           accumulate=ki > 0, collective_axis=axis)

                            @tg.when(ki == steps - 1)
                            def _():
                                tg.tcgen05_commit_arrive(mma_done.at[acc_slot], collective_axis=axis)
                        tg.fori_loop(0, steps, multiply, None)

            @tg.when(wg == 1)
            def _store():
                tg.wait_smem_to_gmem(0, wait_read_only=True)
                tg.barrier_wait(mma_done.at[acc_slot])
                out = c.at[tg.ds(mi * tile_m + rank * block_m, block_m), tg.ds(ni * tile_n, tile_n)]
                slices = tile_n // epilogue_n
                for j in range(slices):
                    cols = tg.ds(j * epilogue_n, epilogue_n)
                    part = tg.async_load_tmem(acc.at[:, cols])
                    if release_tmem_early and j == slices - 1:
                        tg.barrier_arrive(store_done.at[acc_slot])  # line: early release
                    tg.wait_load_tmem()
                    acc_smem[j % 2] = part.astype(dtype)
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(acc_smem.at[j % 2], out.at[:, cols])  # line: blackwell store
                    tg.wait_smem_to_gmem(1, wait_read_only=True)
                if not release_tmem_early:
                    tg.barrier_arrive(store_done.at[acc_slot])

        if final_store_wait:
            tg.wait_smem_to_gmem(0, wait_read_only=True)
    return matmul
