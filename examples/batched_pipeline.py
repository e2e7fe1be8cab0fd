"""A batched Hopper GEMM written the Pallas way: a batch grid axis and BlockSpecs with a squeezed batch dimension.

c[i] = a[i] @ b[i] for every i of the batch: a, b and c are 3-D arrays
[batch, rows, columns]. The grid has an axis per batch element and per output
tile; each block runs `tg.emit_pipeline` over K with

    tg.BlockSpec((None, tile_m, tile_k), lambda ki: (i, mi, ki))

where `None` squeezes the batch dimension, as in Pallas: the index map gives
the batch element itself, and the SMEM blocks the body receives are 2-D
(tile_m, tile_k), ready for `tg.wgmma`. The result tile goes out through a
(1, tile_m, tile_n) SMEM buffer into `c.at[tg.ds(i, 1), rows, cols]`: TMA copies
boxes with every dimension of the array (a dimension may have size 1).

    python examples/batched_pipeline.py     # on the GPU if there is one, else interpreted
"""
import numpy as np

import tilegemm as tg


def build(batch, m, n, k, dtype=tg.float16, *, tile_m=64, tile_n=128, tile_k=64, stages=2):
    """c[batch, m, n] = a[batch, m, k] @ b[batch, k, n] with f32 accumulation."""
    mma_layout = lambda minor: tg.mma_transforms(minor, dtype)  # noqa: E731

    @tg.kernel(in_specs=[tg.ShapeDtype((batch, m, k), dtype), tg.ShapeDtype((batch, k, n), dtype)],
               out_shape=tg.ShapeDtype((batch, m, n), dtype),
               grid=(batch, tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)), grid_names=("batch", "m", "n"),
               scratch_shapes=dict(acc=tg.ACC((tile_m, tile_n)),
                                   c_smem=tg.SMEM((1, tile_m, tile_n), dtype, transforms=mma_layout(tile_n))),
               name="batched_pipeline")
    def batched_matmul(a, b, c, acc, c_smem):
        i, mi, ni = tg.axis_index("batch"), tg.axis_index("m"), tg.axis_index("n")

        def step(indices, a_block, b_block):     # 2-D blocks: the batch dimension is squeezed
            tg.wgmma(acc, a_block, b_block)
            tg.wgmma_wait(0)

        tg.emit_pipeline(
            step, grid=(tg.cdiv(k, tile_k),), max_concurrent_steps=stages,
            in_specs=[tg.BlockSpec((None, tile_m, tile_k), lambda ki: (i, mi, ki), transforms=mma_layout(tile_k)),
                      tg.BlockSpec((None, tile_k, tile_n), lambda ki: (i, ki, ni), transforms=mma_layout(tile_n))],
        )(a, b)
        c_smem.at[0][...] = acc[...].astype(dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[tg.ds(i, 1), tg.ds(mi * tile_m, tile_m), tg.ds(ni * tile_n, tile_n)])
        tg.wait_smem_to_gmem(0)
    return batched_matmul


def random_batch(batch, m, n, k, dtype=tg.float16, seed=0):
    """Seeded iid-normal a [batch, m, k] and b [batch, k, n] (scaled by 1/sqrt(k))."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    b = (rng.standard_normal((batch, k, n)) / np.sqrt(k)).astype(dtype)
    return a, b


def main():
    from tilegemm.showcase import gpu_present
    on_gpu = gpu_present()
    shape = (4, 1024, 1024, 512) if on_gpu else (3, 136, 200, 72)
    a, b = random_batch(*shape)
    c = build(*shape)(a, b, interpret=not on_gpu)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    error = np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)
    print(f"batched a @ b at {'x'.join(map(str, shape))} ({'GPU' if on_gpu else 'interpreted'}): "
          f"relative error {error:.2e}")


if __name__ == "__main__":
    main()
