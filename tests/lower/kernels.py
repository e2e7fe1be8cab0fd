"""Small kernels for the lowering tests: one tile of TMA + WGMMA, a clustered multicast GEMM, illegal-to-lower ones."""
import tilegemm as tg
from tilegemm.model.layouts import stored

TILE = 64


def tma_wgmma(n=TILE, k=2 * TILE, dependent_launch=False, l2_promotion=None):
    """C[64, n] = A[64, k] @ B[k, n], k in steps of 64: TMA loads (asking L2 for `l2_promotion` bytes a miss), one
    WGMMA per step, a TMA-store epilogue."""

    @tg.kernel(out_shape=tg.ShapeDtype((TILE, n), tg.float16), dependent_launch=dependent_launch,
               scratch_shapes=dict(a_smem=tg.SMEM((TILE, TILE), tg.float16, transforms=tg.mma_transforms(TILE, tg.float16)),
                                   b_smem=tg.SMEM((TILE, n), tg.float16, transforms=tg.mma_transforms(n, tg.float16)),
                                   c_smem=tg.SMEM((TILE, n), tg.float16), acc=tg.ACC((TILE, n)),
                                   loaded=tg.Barrier(num_arrivals=2)))
    def one_row_of_tiles(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        def step(ki, _):
            ks = tg.ds(ki * TILE, TILE)
            tg.copy_gmem_to_smem(a.at[:, ks], a_smem, loaded.at[0], l2_promotion=l2_promotion)
            tg.copy_gmem_to_smem(b.at[ks, :], b_smem, loaded.at[0], l2_promotion=l2_promotion)
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
        tg.fori_loop(0, k // TILE, step, None)
        c_smem[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c)
        tg.wait_smem_to_gmem(0)
    return one_row_of_tiles


def multicast(m, n, k, tile_m=64, tile_n=128, tile_k=64, dependent_launch=False, l2_promotion=None):
    """A 2x1 cluster: the two blocks of a cluster share B's tile, each loading half and multicasting it."""
    transforms = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, 2 * tile_m), tg.cdiv(n, tile_n)),
               dependent_launch=dependent_launch,
               grid_names=("mc", "n"), cluster=(2,), cluster_names=("cm",),
               scratch_shapes=dict(a_smem=tg.SMEM((tile_m, tile_k), tg.float16, transforms=transforms(tile_k)),
                                   b_smem=tg.SMEM((tile_k, tile_n), tg.float16, transforms=transforms(tile_n)),
                                   c_smem=tg.SMEM((tile_m, tile_n), tg.float16), acc=tg.ACC((tile_m, tile_n)),
                                   loaded=tg.Barrier(num_arrivals=2),
                                   consumed=tg.ClusterBarrier(collective_axes=("cm",), num_arrivals=1)))
    def clustered(a, b, c, a_smem, b_smem, c_smem, acc, loaded, consumed):
        rows = tg.ds((tg.axis_index("mc") * 2 + tg.axis_index("cm")) * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded.at[0], collective_axes="cm", l2_promotion=l2_promotion)
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
            tg.barrier_arrive(consumed.at[0])     # both blocks of the cluster ...
            tg.barrier_wait(consumed.at[0])       # ... are done with b_smem before the next multicast
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)
        c_smem[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return clustered


def warp_specialized(m, n, k, tile_m=64, tile_n=128, tile_k=64, stages=2):
    """Warp 0 of a producer warpgroup issues the TMA copies (core_map); the consumer waits with explicit
    phase parities and stores its accumulator straight to GMEM from registers."""
    transforms = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), num_threads=2, thread_name="wg",
               scratch_shapes=dict(a_smem=tg.SMEM((stages, tile_m, tile_k), tg.float16, transforms=transforms(tile_k)),
                                   b_smem=tg.SMEM((stages, tile_k, tile_n), tg.float16, transforms=transforms(tile_n)),
                                   full=tg.Barrier(num_arrivals=2, num_barriers=stages),
                                   empty=tg.Barrier(num_arrivals=1, num_barriers=stages)))
    def warp_specialized(a, b, c, a_smem, b_smem, full, empty):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)
        steps = tg.cdiv(k, tile_k)

        @tg.when(tg.axis_index("wg") == 1)
        def _producer():
            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)
                def _():
                    def fill(ki, _):
                        slot = ki % stages

                        @tg.when(ki >= stages)
                        def _():
                            tg.barrier_wait(empty.at[slot], (ki // stages - 1) % 2)
                        ks = tg.ds(ki * tile_k, tile_k)
                        tg.copy_gmem_to_smem(a.at[rows, ks], a_smem.at[slot], full.at[slot])
                        tg.copy_gmem_to_smem(b.at[ks, cols], b_smem.at[slot], full.at[slot])
                    tg.fori_loop(0, steps, fill, None)

        @tg.when(tg.axis_index("wg") == 0)
        def _consumer():
            def compute(acc):
                def consume(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(full.at[slot], (ki // stages) % 2)
                    tg.wgmma(acc, a_smem.at[slot], b_smem.at[slot])
                    tg.wgmma_wait(0)
                    tg.barrier_arrive(empty.at[slot])
                tg.fori_loop(0, steps, consume, None)
                c.at[rows, cols][...] = acc[...].astype(tg.float16)
            tg.run_scoped(compute, tg.ACC((tile_m, tile_n)))
    return warp_specialized


def register_a_operand():
    """wgmma with A from registers: legal tilegemm, not lowered yet."""

    @tg.kernel(out_shape=tg.ShapeDtype((TILE, TILE), tg.float32),
               scratch_shapes=dict(a_smem=tg.SMEM((TILE, TILE), tg.float16, transforms=tg.mma_transforms(TILE, tg.float16)),
                                   b_smem=tg.SMEM((TILE, TILE), tg.float16, transforms=tg.mma_transforms(TILE, tg.float16)),
                                   acc=tg.ACC((TILE, TILE))))
    def register_a(a, b, c, a_smem, b_smem, acc):
        tg.wgmma(acc, a_smem[...], b_smem)
        tg.wgmma_wait(0)
        c[...] = acc[...]
    return register_a


def dot_of_arrays():
    """tg.dot on register arrays: the CUDA-core lowering reads its operands from GMEM or SMEM refs."""

    @tg.kernel(out_shape=tg.ShapeDtype((32, 32), tg.float32))
    def dot_arrays(a, b, c):
        c[...] = tg.dot(a[...], b[...])
    return dot_arrays


def one_wgmma(n, dtype=tg.float16, out_dtype=tg.float32):
    """c [64, n] = a [64, 64] @ b [64, n]: one TMA of each into SMEM laid out by tg.mma_transforms, one WGMMA; the
    f32 accumulator rounded to `out_dtype` in registers."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, n), out_dtype),
               scratch_shapes=[tg.SMEM((64, 64), dtype, transforms=tg.mma_transforms(64, dtype)),
                               tg.SMEM((64, n), dtype, transforms=tg.mma_transforms(n, dtype)),
                               tg.ACC((64, n)), tg.Barrier(num_arrivals=2)])
    def product(a, b, c, a_smem, b_smem, acc, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c[...] = acc[...] if out_dtype == tg.float32 else acc[...].astype(out_dtype)
    return product


def two_row_specs(n=TILE, k=2 * TILE):
    return tg.ShapeDtype((TILE, k), tg.float16), tg.ShapeDtype((k, n), tg.float16)


def k_steps(a_rows, b_cols, a_smem, b_smem, loaded, k, mma):
    """For each K step of a_smem's width: TMA a_rows' and b_cols' slices into a_smem and b_smem, wait for them,
    then mma(ki), which multiplies the stage and waits for it before the next step's copies overwrite it.

    Records ops into the kernel being traced; `a_rows` [tile, K] and `b_cols` [K, tile] are GMEM views.
    """
    tile_k = a_smem.shape[1]

    def step(ki, _):
        ks = tg.ds(ki * tile_k, tile_k)
        tg.copy_gmem_to_smem(a_rows.at[:, ks], a_smem, loaded.at[0])
        tg.copy_gmem_to_smem(b_cols.at[ks, :], b_smem, loaded.at[0])
        tg.barrier_wait(loaded.at[0])
        mma(ki)
    tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)


def wgmma_main_loop(a_rows, b_cols, a_smem, b_smem, acc, loaded, k):
    """acc += a_rows @ b_cols (k_steps): one WGMMA a step, waited for before the next."""
    def mma(ki):
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
    k_steps(a_rows, b_cols, a_smem, b_smem, loaded, k, mma)


def tcgen05_main_loop(a_rows, b_cols, a_smem, b_smem, acc_tmem, loaded, mma_done, k):
    """acc_tmem = a_rows @ b_cols (k_steps): one 1-CTA tcgen05 MMA a step, its commit waited for."""
    def mma(ki):
        tg.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done.at[0], accumulate=ki > 0)
        tg.barrier_wait(mma_done.at[0])
    k_steps(a_rows, b_cols, a_smem, b_smem, loaded, k, mma)


def tcgen05_epilogue_scratch(tile=128, tile_k=64):
    """Scratch of a one-tile tcgen05 kernel with an f16 TMA-store epilogue: operand and output tiles in shared
    memory, the f32 accumulator in TMEM, and the loads' and the MMA's barriers."""
    mma_layout = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731
    return dict(a_smem=tg.SMEM((tile, tile_k), tg.float16, transforms=mma_layout(tile_k)),
                b_smem=tg.SMEM((tile_k, tile), tg.float16, transforms=mma_layout(tile)),
                c_smem=tg.SMEM((tile, tile), tg.float16, transforms=mma_layout(tile)),
                acc_tmem=tg.TMEM((tile, tile), tg.float32), loaded=tg.Barrier(num_arrivals=2),
                mma_done=tg.Barrier(num_arrivals=1, orders_tensor_core=True))


def transposed_operands(m, n, k, a_layout, b_layout, tile=128, tile_k=64, dtype=tg.float16, b_dtype=None):
    """C = A @ B in f16 with `dtype` a stored as `a_layout` and b (`b_dtype`, default `dtype`) as `b_layout`
    (tilegemm.model.layouts): TMA copies the tiles as stored and two 64-row WGMMAs read them, transposed where the
    stored order is not (M, K) / (K, N)."""
    a_tile, b_tile = stored(a_layout, tile, tile_k), stored(b_layout, tile, tile_k)
    b_dtype = b_dtype or dtype

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, tile), tg.cdiv(n, tile)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM(a_tile, dtype, transforms=tg.mma_transforms(a_tile[1], dtype)),
                                   b_smem=tg.SMEM(b_tile, b_dtype, transforms=tg.mma_transforms(b_tile[1], b_dtype)),
                                   c_smem=tg.SMEM((tile, tile), tg.float16), acc0=tg.ACC((TILE, tile)),
                                   acc1=tg.ACC((TILE, tile)), loaded=tg.Barrier(num_arrivals=2)))
    def transposed(a, b, c, a_smem, b_smem, c_smem, acc0, acc1, loaded):
        rows, cols = tg.ds(tg.axis_index("m") * tile, tile), tg.ds(tg.axis_index("n") * tile, tile)
        a_op = a_smem if a_layout == "mk" else a_smem.T
        b_op = b_smem if b_layout == "kn" else b_smem.T

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[stored(a_layout, rows, ks)], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[stored(b_layout, cols, ks)], b_smem, loaded.at[0])
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc0, a_op.at[0:TILE], b_op)
            tg.wgmma(acc1, a_op.at[TILE:2 * TILE], b_op)
            tg.wgmma_wait(0)
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)
        c_smem[0:TILE] = acc0[...].astype(tg.float16)
        c_smem[TILE:2 * TILE] = acc1[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return transposed


def transposed_tcgen05(m, n, k, a_layout, b_layout, tile=128, tile_k=64, dtype=tg.float16, b_dtype=None):
    """The Blackwell form of `transposed_operands`: one 128x128 tcgen05 MMA per K step into TMEM (f32 out)."""
    a_tile, b_tile = stored(a_layout, tile, tile_k), stored(b_layout, tile, tile_k)
    b_dtype = b_dtype or dtype

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float32), grid=(tg.cdiv(m, tile), tg.cdiv(n, tile)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM(a_tile, dtype, transforms=tg.mma_transforms(a_tile[1], dtype)),
                                   b_smem=tg.SMEM(b_tile, b_dtype, transforms=tg.mma_transforms(b_tile[1], b_dtype)),
                                   acc_tmem=tg.TMEM((tile, tile), tg.float32), loaded=tg.Barrier(num_arrivals=2),
                                   mma_done=tg.Barrier(orders_tensor_core=True)))
    def transposed(a, b, c, a_smem, b_smem, acc_tmem, loaded, mma_done):
        rows, cols = tg.ds(tg.axis_index("m") * tile, tile), tg.ds(tg.axis_index("n") * tile, tile)

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[stored(a_layout, rows, ks)], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[stored(b_layout, cols, ks)], b_smem, loaded.at[0])
            tg.barrier_wait(loaded.at[0])
            tg.tcgen05_mma(acc_tmem, a_smem if a_layout == "mk" else a_smem.T, b_smem if b_layout == "kn" else b_smem.T,
                           mma_done.at[0], accumulate=ki > 0)
            tg.barrier_wait(mma_done.at[0])
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)
        c.at[rows, cols][...] = acc_tmem[...]
    return transposed
