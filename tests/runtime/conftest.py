"""Shared pieces of the runtime tests: a one-tile TMA + WGMMA kernel (C = A @ B for one 64x64x64 tile)."""
import pytest

import tilegemm as tg

TILE = 64


def _one_tile_kernel():
    transforms = tg.mma_transforms(TILE, tg.float16)

    @tg.kernel(out_shape=tg.ShapeDtype((TILE, TILE), tg.float32),
               scratch_shapes=[tg.SMEM((TILE, TILE), tg.float16, transforms=transforms),
                               tg.SMEM((TILE, TILE), tg.float16, transforms=transforms),
                               tg.ACC((TILE, TILE)), tg.Barrier(num_arrivals=2)])
    def one_tile(a_ref, b_ref, c_ref, a_smem, b_smem, acc, loaded):
        tg.copy_gmem_to_smem(a_ref, a_smem, loaded)
        tg.copy_gmem_to_smem(b_ref, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c_ref[...] = acc[...]

    return one_tile


@pytest.fixture
def one_tile():
    return _one_tile_kernel()
