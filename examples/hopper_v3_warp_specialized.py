"""Hopper ladder v3 — warp specialization: a producer warpgroup feeds a consumer through a ring of SMEM stages.

What changed from v2: the block runs two warpgroups (`num_threads=2`) with
different jobs. Warpgroup 0, the producer, only issues TMA copies; warpgroup 1,
the consumer, only waits for data and issues WGMMAs. They meet at a ring of
`stages` SMEM slots guarded by two barriers per slot:

* `full[s]`: the TMA copies of slot s arrive on it (two copies: A and B), and
  the consumer waits on it before reading the slot;
* `empty[s]`: the consumer arrives on it once its WGMMA has finished reading
  the slot (`wgmma_wait(0)` first), and the producer waits on it before
  refilling the slot. The first `stages` fills find the ring empty, so the
  producer skips that wait for them (`tg.when(ki >= stages)`).

Each warpgroup tracks the phase of every barrier it waits on, so the k-th wait
on a slot's barrier waits for the k-th time that slot was filled (or emptied).

The Croqtile ladder runs this structure with a single stage (STAGES=1, the default here):
288.3 TFLOP/s, only 1.01x v2, because with one slot the producer can still
only load while the consumer is idle. The structure is what matters: v4 gets
its 1.7x from the same code with more stages, a second consumer and a larger
N tile. Try `build(m, n, k, stages=2)`.
"""
import tilegemm as tg

ARCH = "sm_90a"
CONFIG = dict(tile_m=64, tile_n=128, tile_k=64, stages=1)
SHAPES = {
    "verify": [(2048, 2048, 2048), (1000, 1016, 520)],
    "interpret": [(200, 136, 72), (136, 264, 328), (40, 24, 8)],
    "benchmark": (8192, 8192, 8192),
}
PRODUCER, CONSUMER = 0, 1  # warpgroup indices


def build(m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=128, tile_k=64, stages=1):
    """c[m, n] = a[m, k] @ b[k, n] with f32 accumulation: a TMA producer and a WGMMA consumer warpgroup."""
    k_iters = tg.cdiv(k, tile_k)
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=tg.mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        c_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=tg.mma_transforms(tile_n, dtype)),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),    # A and B copies of a slot landed
        empty=tg.Barrier(num_arrivals=1, num_barriers=stages),   # the consumer is done with a slot
    )

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)],
               out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)),
               grid_names=("m", "n"), num_threads=2, thread_name="wg", scratch_shapes=scratch,
               name="hopper_v3_warp_specialized")
    def matmul(a, b, c, a_smem, b_smem, c_smem, full, empty):
        wg = tg.axis_index("wg")
        rows = tg.ds(tg.axis_index("m") * tile_m, tile_m)
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)

        @tg.when(wg == PRODUCER)
        def _producer():
            def fill(ki, _):
                slot = ki % stages

                @tg.when(ki >= stages)
                def _():
                    tg.barrier_wait(empty.at[slot])     # the consumer released this slot
                ks = tg.ds(ki * tile_k, tile_k)
                tg.copy_gmem_to_smem(a.at[rows, ks], a_smem.at[slot], full.at[slot])
                tg.copy_gmem_to_smem(b.at[ks, cols], b_smem.at[slot], full.at[slot])
            tg.fori_loop(0, k_iters, fill, None)

        @tg.when(wg == CONSUMER)
        def _consumer():
            def compute(acc):                          # the accumulator lives in the consumer's registers only
                def consume(ki, _):
                    slot = ki % stages
                    tg.barrier_wait(full.at[slot])
                    tg.wgmma(acc, a_smem.at[slot], b_smem.at[slot])
                    tg.wgmma_wait(0)                    # the MMA has read the slot ...
                    tg.barrier_arrive(empty.at[slot])   # ... so the producer may refill it
                tg.fori_loop(0, k_iters, consume, None)

                c_smem[...] = acc[...].astype(dtype)
                tg.commit_smem()
                tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
                tg.wait_smem_to_gmem(0)
            tg.run_scoped(compute, tg.ACC((tile_m, tile_n), tg.float32))
    return matmul


if __name__ == "__main__":
    from tilegemm.showcase import main
    main(__import__(__name__))
