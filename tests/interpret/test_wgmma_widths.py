"""WGMMA at the narrow and odd widths the hardware allows (N = 8, 24, ..., 184): the interpreter multiplies them."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs


def one_tile(n):
    """C[64, n] = A[64, 64] @ B[64, n] by one wgmma; B swizzled where its row is a whole swizzle span."""
    b_swizzled = any(n * 2 % span == 0 for span in (32, 64, 128))
    @tg.kernel(out_shape=tg.ShapeDtype((64, n), tg.float32),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, n), tg.float16,
                                       transforms=tg.mma_transforms(n, tg.float16) if b_swizzled else ()),
                               tg.Barrier(num_arrivals=2), tg.ACC((64, n))])
    def matmul(a, b, c, a_smem, b_smem, loaded, acc):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c[...] = acc[...]
    return matmul


@pytest.mark.parametrize("n", [8, 24, 40, 184])
def test_a_wgmma_of_an_odd_multiple_of_8_columns_matches_numpy(n):
    a, b = random_inputs(64, n, 64, tg.float16)
    np.testing.assert_allclose(one_tile(n)(a, b, interpret=True), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-4)
