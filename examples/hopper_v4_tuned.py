"""Hopper ladder v4 — tuned: two consumer warpgroups, a deep ring, a 128x256 block tile.

Same producer/consumer structure as v3; what the Croqtile ladder changed to go from
288.3 to 489.9 TFLOP/s (1.7x, 109.5% of cuBLAS on an H800 PCIe):

* Two consumers (`num_threads=3`: producer 0, consumers 1 and 2). Each owns a
  64-row half of a 128-row block tile and reads the same B tile, so every B
  byte loaded feeds twice the MMA work and the block tile is 2x larger.
* More stages: while the consumers multiply slot s the producer is already
  filling the next ones, hiding TMA latency (the ladder: STAGES 1 -> 2).
* A wider N tile: the ladder's 28-iteration search found N=192 best on an H800
  PCIe with 2 stages (~80 KB SMEM, 2 blocks/SM). The defaults here are the
  usual H100/H200 choice instead, N=256 with 4 stages and one block per SM;
  `build(m, n, k, tile_n=192, stages=2)` is the ladder's configuration.

Beyond the ladder, two standard refinements:

* `set_max_registers` moves registers from the producer (kept at 40 per
  thread: it only computes addresses) to the consumers (232), whose 64x256 f32
  accumulator alone needs 128 registers per thread.
* The consumers keep one WGMMA in flight (`wgmma_wait(1)`) and release a slot
  one step late, once the MMA that read it is known to be done, so the tensor
  cores are not drained at every K step. This needs stages >= 2.

The epilogue is per consumer and tiled: 64x64 slices of the accumulator go to
SMEM and out with TMA, two slices in flight, which keeps the epilogue buffers
at 32 KiB so 4 stages of 48 KiB fit in the 227 KiB of shared memory.
"""
import tilegemm as tg

ARCH = "sm_90a"
CONFIG = dict(tile_m=128, tile_n=256, tile_k=64, stages=4, epilogue_tile_n=64)
SHAPES = {
    "verify": [(4096, 4096, 4096), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (136, 264, 328), (40, 24, 8)],
    "benchmark": (8192, 8192, 8192),
}
PRODUCER = 0                 # warpgroup 0 loads; warpgroups 1 and 2 compute
CONSUMERS = 2
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232   # 40 + 2 * 232 = 504 = 3 x 168, the launch budget


def build(m, n, k, dtype=tg.float16, *, tile_m=128, tile_n=256, tile_k=64, stages=4, epilogue_tile_n=64):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation: 1 TMA producer + 2 WGMMA consumer warpgroups."""
    if stages < 2:
        raise ValueError(f"stages={stages}: v4 releases each slot one step late, which needs at least 2 stages")
    if tile_m % CONSUMERS or tile_n % epilogue_tile_n:
        raise ValueError(f"tile_m={tile_m} must split over {CONSUMERS} consumers and tile_n={tile_n} into "
                         f"epilogue tiles of {epilogue_tile_n}")
    half_m = tile_m // CONSUMERS
    k_iters = tg.cdiv(k, tile_k)
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        # Two epilogue buffers per consumer: one being written while the other's TMA store drains.
        c_smem=tg.SMEM((CONSUMERS, 2, half_m, epilogue_tile_n), dtype,
                       transforms=tg.mma_transforms(epilogue_tile_n, dtype)),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),            # A and B copies of a slot landed
        empty=tg.Barrier(num_arrivals=CONSUMERS, num_barriers=stages),   # both consumers are done with a slot
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), num_threads=CONSUMERS + 1, thread_name="wg", scratch_shapes=scratch,
               name="hopper_v4_tuned")
    def matmul(a, b, c, a_smem, b_smem, c_smem, full, empty):
        wg = tg.axis_index("wg")
        m0 = tg.axis_index("m") * tile_m
        n0 = tg.axis_index("n") * tile_n

        @tg.when(wg == PRODUCER)
        def _producer():
            tg.set_max_registers(PRODUCER_REGISTERS, action="decrease")

            def fill(ki, _):
                slot = ki % stages

                @tg.when(ki >= stages)
                def _():
                    tg.barrier_wait(empty.at[slot])     # both consumers released this slot
                ks = tg.ds(ki * tile_k, tile_k)
                tg.copy_gmem_to_smem(a.at[tg.ds(m0, tile_m), ks], a_smem.at[slot], full.at[slot])
                tg.copy_gmem_to_smem(b.at[ks, tg.ds(n0, tile_n)], b_smem.at[slot], full.at[slot])
            tg.fori_loop(0, k_iters, fill, None)

        @tg.when(wg != PRODUCER)
        def _consumer():
            tg.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1                               # which 64-row half of the block tile
            half_rows = tg.ds(half * half_m, half_m)

            def compute(acc):
                def consume(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(full.at[slot])
                    tg.wgmma(acc, a_smem.at[slot, half_rows], b_smem.at[slot])
                    tg.wgmma_wait(1)                    # the previous step's MMA is done ...

                    @tg.when(ki > 0)
                    def _():
                        tg.barrier_arrive(empty.at[(ki - 1) % stages])   # ... so its slot may be refilled
                tg.fori_loop(0, k_iters, consume, None)
                tg.wgmma_wait(0)

                out = acc[...].astype(dtype)
                out_rows = tg.ds(m0 + half * half_m, half_m)
                for j in range(tile_n // epilogue_tile_n):     # static: unrolled while tracing
                    buf = c_smem.at[half, j % 2]
                    tg.wait_smem_to_gmem(1, wait_read_only=True)  # the store that last read `buf` is done
                    buf[...] = out[:, j * epilogue_tile_n:(j + 1) * epilogue_tile_n]
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(buf, c.at[out_rows, tg.ds(n0 + j * epilogue_tile_n, epilogue_tile_n)])
                tg.wait_smem_to_gmem(0)
            tg.run_scoped(compute, tg.ACC((half_m, tile_n), tg.float32))
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
