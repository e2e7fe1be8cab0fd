"""Blackwell ladder 2 — warp specialization: one warp issues TMA copies, another issues MMAs.

What changed from rung 1: TMA copies and tcgen05 MMAs are each issued by a
single lane, so instead of whole warpgroups (as on Hopper) the kernel gives
each job to one *warp*. `tg.core_map(tg.WarpMesh("warp"))` runs its body once
per warp of the warpgroup; warp 0 only loads, warp 1 only issues MMAs, and
neither waits for the other's instruction stream. Only scalar work, copies,
barrier operations and MMAs are allowed inside; the warps meet again at its end.

The explicit ring of `max_concurrent_steps` SMEM slots replaces the pipeline
helper (the buffers are now declared in scratch_shapes):

* `loaded[s]` (2 arrivals: the A and B copies): warp 1 waits on it before the
  MMA that reads slot s.
* `consumed[s]`: the tensor core arrives on it when that MMA has finished
  reading slot s; warp 0 waits on it before refilling the slot, except for the
  first `max_concurrent_steps` fills, which find the ring empty.
* `mma_done`: after the last MMA, `tcgen05_commit_arrive` asks the tensor core
  to arrive once every MMA issued so far has completed; the epilogue (the whole
  warpgroup, outside the core_map) waits on it before reading TMEM.

Barriers the tensor core arrives on are declared `orders_tensor_core=True`.
Tutorial numbers: 45.5% TensorCore utilisation (from 37.6%), 71.7% of cuBLAS.
"""
import tilegemm as tg

ARCH = "sm_100a"
CONFIG = dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4)
SHAPES = {
    "verify": [(4096, 8192, 4096), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (136, 264, 328), (40, 24, 8)],
    "benchmark": (4096, 8192, 4096),
}
TMA_WARP, MMA_WARP = 0, 1


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation in TMEM; a TMA warp and an MMA warp per tile."""
    k_iters = tg.cdiv(k, tile_k)
    stages = max_concurrent_steps
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        acc_tmem=tg.TMEM((tile_m, tile_n), tg.float32),
        acc_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        loaded=tg.Barrier(num_arrivals=2, num_barriers=stages),
        consumed=tg.Barrier(num_arrivals=1, num_barriers=stages, orders_tensor_core=True),
        mma_done=tg.Barrier(num_arrivals=1, num_barriers=1, orders_tensor_core=True),
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), scratch_shapes=scratch, name="blackwell_2_warp_specialized")
    def matmul(a, b, c, a_smem, b_smem, acc_tmem, acc_smem, loaded, consumed, mma_done):
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _per_warp():
            warp = tg.axis_index("warp")

            @tg.when(warp == TMA_WARP)
            def _load():
                def load_step(ki, _):
                    slot = ki % stages

                    @tg.when(ki >= stages)
                    def _():
                        tg.barrier_wait(consumed.at[slot])     # the MMA that read this slot is done
                    ks = tg.ds(ki * tile_k, tile_k)
                    tg.copy_gmem_to_smem(a.at[rows, ks], a_smem.at[slot], loaded.at[slot])
                    tg.copy_gmem_to_smem(b.at[ks, cols], b_smem.at[slot], loaded.at[slot])
                tg.fori_loop(0, k_iters, load_step, None)

            @tg.when(warp == MMA_WARP)
            def _mma():
                def mma_step(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(loaded.at[slot])
                    tg.tcgen05_mma(acc_tmem, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                   accumulate=ki > 0)
                tg.fori_loop(0, k_iters, mma_step, None)
                tg.tcgen05_commit_arrive(mma_done.at[0])       # arrives when every MMA above is done

        tg.barrier_wait(mma_done.at[0])
        acc = tg.async_load_tmem(acc_tmem)
        tg.wait_load_tmem()
        acc_smem[...] = acc.astype(dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(acc_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0, wait_read_only=True)
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
