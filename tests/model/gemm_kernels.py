"""A small pipelined WGMMA GEMM written with tilegemm primitives, for the model and tuner tests.

One warpgroup per block: a static prologue fills `stages - 1` SMEM stages by
TMA, the K loop waits for a stage, multiplies it and refills it; the output
tile goes out through SMEM by TMA. `persistent=True` launches `num_sms`
blocks that walk the tiles with tg.nd_loop in tg.planar_snake order;
`multicast_n=2` pairs neighbouring blocks along n in a cluster that
multicasts their common A tile; `grid_order=("n", "m")` launches one block per
tile with n on the grid's first axis (the hardware starts blocks first axis
fastest: n fastest).
"""
import numpy as np

import tilegemm as tg


def mma_transforms(minor_elems, dtype):
    """Tiling + swizzle for an operand whose contiguous dimension has `minor_elems` elements."""
    itemsize = np.dtype(dtype).itemsize
    swizzle = tg.find_swizzle(minor_elems * itemsize * 8)
    return (tg.TilingTransform((8, swizzle // itemsize)), tg.SwizzleTransform(swizzle))


def build(m, n, k, dtype=tg.float16, tile_m=128, tile_n=128, tile_k=64, stages=2, persistent=False,
          minor_dim=1, tile_width=1, num_sms=132, multicast_n=1, grid_order=("m", "n")):
    """c[m, n] = a[m, k] @ b[k, n] with one MMA warpgroup per block."""
    m_tiles, n_tiles, k_steps = tg.cdiv(m, tile_m), tg.cdiv(n, tile_n), tg.cdiv(k, tile_k)
    scratch = dict(
        a_smem=tg.SMEM((stages, tile_m, tile_k), dtype, transforms=mma_transforms(tile_k, dtype)),
        b_smem=tg.SMEM((stages, tile_k, tile_n), dtype, transforms=mma_transforms(tile_n, dtype)),
        out_smem=tg.SMEM((tile_m, tile_n), dtype),
        acc=tg.ACC((tile_m, tile_n), tg.float32),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),
    )
    if persistent:
        grid, names = (min(num_sms, m_tiles * n_tiles),), ("block",)
    else:
        extents = dict(m=m_tiles, n=n_tiles // multicast_n)
        grid, names = tuple(extents[name] for name in grid_order), grid_order
    cluster = dict(cluster=(multicast_n,), cluster_names=("c",)) if multicast_n > 1 else {}
    a_multicast = dict(collective_axes="c") if multicast_n > 1 else {}

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=grid, grid_names=names, scratch_shapes=scratch,
               name="test_gemm", **cluster)
    def matmul(a, b, c, a_smem, b_smem, out_smem, acc, full):
        def tile(m_idx, n_idx, first_step):
            def load(ki):
                slot = (first_step + ki) % stages
                ks = tg.ds(ki * tile_k, tile_k)
                tg.copy_gmem_to_smem(a.at[tg.ds(m_idx * tile_m, tile_m), ks], a_smem.at[slot], full.at[slot],
                                     **a_multicast)
                tg.copy_gmem_to_smem(b.at[ks, tg.ds(n_idx * tile_n, tile_n)], b_smem.at[slot], full.at[slot])

            for ki in range(min(stages - 1, k_steps)):
                load(ki)
            acc[...] = tg.zeros((tile_m, tile_n), tg.float32)

            def step(ki, _):
                slot = (first_step + ki) % stages
                tg.barrier_wait(full.at[slot])
                tg.wgmma(acc, a_smem.at[slot], b_smem.at[slot])
                tg.wgmma_wait(0)

                @tg.when(ki + stages - 1 < k_steps)
                def _():
                    load(ki + stages - 1)
            tg.fori_loop(0, k_steps, step, None)
            out_smem[...] = acc[...].astype(dtype)
            tg.commit_smem()
            tg.copy_smem_to_gmem(out_smem, c.at[tg.ds(m_idx * tile_m, tile_m), tg.ds(n_idx * tile_n, tile_n)])
            tg.wait_smem_to_gmem(0)

        if persistent:
            @tg.nd_loop((m_tiles * n_tiles,), collective_axes="block")
            def _(info):
                (lin,) = info.index
                m_idx, n_idx = tg.planar_snake(lin, (m_tiles, n_tiles), minor_dim, tile_width)
                tile(m_idx, n_idx, info.local_index * k_steps)
        elif multicast_n > 1:
            tile(tg.axis_index("m"), tg.axis_index("n") * multicast_n + tg.axis_index("c"), 0)
        else:
            tile(tg.axis_index("m"), tg.axis_index("n"), 0)

    return matmul


def specs(m, n, k, dtype=tg.float16):
    """The (A, B) ShapeDtypes a GEMM kernel is traced with."""
    return tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)
