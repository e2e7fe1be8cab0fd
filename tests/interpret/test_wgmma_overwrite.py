"""wgmma(accumulate=False): acc = a @ b, the accumulator's old value unread (a promoting K loop's fresh partial
sum), in the interpreter, the lowering (scale-d 0 on the first instruction only) and at the user's line."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs


def twice(accumulate):
    """C[64, 64] = the accumulator after acc = 7, then two wgmmas of A[64, 64] @ B[64, 64], the second with
    `accumulate`."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.Barrier(num_arrivals=2), tg.ACC((64, 64))])
    def matmul(a, b, c, a_smem, b_smem, loaded, acc):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        acc[...] = tg.full((64, 64), 7.0, tg.float32)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma(acc, a_smem, b_smem, accumulate=accumulate)
        tg.wgmma_wait(0)
        c[...] = acc[...]
    return matmul


@pytest.mark.parametrize("accumulate,copies,start", [(True, 2, 7.0), (False, 1, 0.0)])
def test_a_wgmma_without_accumulate_overwrites_the_accumulator(accumulate, copies, start):
    a, b = random_inputs(64, 64, 64, tg.float16)
    product = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(twice(accumulate)(a, b, interpret=True), start + copies * product,
                               rtol=1e-5, atol=1e-3)


def test_the_lowering_clears_accumulate_for_the_first_instruction_only():
    source = twice(False).lower(tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16),
                                arch="sm_90a").source
    body = source[source.index("ACCUMULATE, False"):]
    gemm, set_back = body.index("cute.gemm("), body.index("ACCUMULATE, True")
    assert gemm < set_back   # the first K block's instruction runs with scale-d 0, the rest accumulate


def test_a_traced_accumulate_is_refused_at_the_users_line():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.ACC((64, 64))])
    def matmul(a, c, a_smem, b_smem, acc):
        tg.wgmma(acc, a_smem, b_smem, accumulate=tg.axis_index("x") == 0)
    with pytest.raises(tg.KernelError, match=r"test_wgmma_overwrite.py:\d+: wgmma's accumulate= must be a static "
                                             "True or False"):
        matmul.trace(tg.ShapeDtype((64, 64), tg.float16))
