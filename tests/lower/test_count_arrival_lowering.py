"""tg.count_arrival lowered: the warpgroup meets at its named barrier, one thread adds to the counter with an
acquire-release atomic at GPU scope, and a barrier that ORs a predicate hands every thread the answer; on the GPU
the last block sums what the others wrote, launch after launch on the same counters."""
import warnings

import numpy as np
import pytest

import tilegemm as tg
from tests.lang.counter_kernels import BLOCKS, X, last_block_sums_kernel
from tilegemm.runtime import device_count

SPECS = (tg.ShapeDtype(X.shape, tg.float32), tg.ShapeDtype((1,), tg.int32))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_arrival_is_one_acquire_release_add_and_a_barrier_that_ors_the_answer(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a tg.CompiledCodeWarning (PTX facts disagreeing) fails the test
        ptx = last_block_sums_kernel().lower(*SPECS, arch=arch).compile().ptx
    adds = [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("atom.global")]
    assert adds == ["atom.global.acq_rel.add.u32", "atom.global.add.u32"]   # the count, the last's reset
    assert "bar.red.or.pred" in ptx


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_the_gpu_the_last_block_sums_every_blocks_rows_launch_after_launch():
    torch = pytest.importorskip("torch")
    kernel, counters = last_block_sums_kernel(), torch.zeros(1, dtype=torch.int32, device="cuda")
    x = torch.from_numpy(X).cuda()
    expected = 2.0 * X[0]
    for i in range(1, BLOCKS):
        expected = expected + 2.0 * X[i]
    for _ in range(3):
        out, _, counters_out = kernel(x, counters)
        assert counters_out.data_ptr() == counters.data_ptr() and int(counters.item()) == 0
        assert np.array_equal(out.cpu().numpy(), expected)
