"""Ordinary SMEM stores reach TMA and tensor-core readers only through `commit_smem`, ordered before the read.

A thread's `commit_smem` fences the stores it made before it. A reader in
another thread is ordered after the stores by a barrier; it must also be
ordered after the fence, so the writer has to commit before it arrives.
"""
import numpy as np
import pytest

import tilegemm as tg

from .kernels import at_line

X = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)


def store_then_tma_store(*, commit_before_arrive):
    """Warpgroup 0 stores X into SMEM and hands it over by a barrier; warpgroup 1 TMA-stores the SMEM to the output.
    Warpgroup 0 calls commit_smem before its arrival, or after it."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 8), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.SMEM((64, 8), tg.float32), tg.Barrier(num_arrivals=1)])
    def kernel(x, y, smem, ready):
        @tg.when(tg.axis_index("wg") == 0)
        def _():
            smem[...] = x[...]  # line: proxy store
            if commit_before_arrive:
                tg.commit_smem()
                tg.barrier_arrive(ready)
            else:
                tg.barrier_arrive(ready)
                tg.commit_smem()

        @tg.when(tg.axis_index("wg") == 1)
        def _():
            tg.barrier_wait(ready)
            tg.copy_smem_to_gmem(smem, y)  # line: proxy tma store
            tg.wait_smem_to_gmem(0)
    return kernel


def test_a_tma_store_after_a_barrier_sees_stores_committed_before_the_arrival():
    np.testing.assert_array_equal(store_then_tma_store(commit_before_arrive=True)(X, interpret=True), X)


def test_a_commit_smem_after_the_arrival_does_not_order_the_stores_before_the_readers_tma_store():
    with pytest.raises(tg.RaceError) as err:
        store_then_tma_store(commit_before_arrive=False)(X, interpret=True)
    message = str(err.value)
    here = __file__
    assert message.startswith(f"{at_line('proxy tma store', here)}: copy_smem_to_gmem (block (x=0) thread wg=1) "
                              "reads SMEM")
    assert f"the store at {at_line('proxy store', here)} (block (x=0) thread wg=0)" in message
    assert "was not followed by tg.commit_smem() before this read was issued" in message


def test_a_thread_may_read_smem_that_its_tma_store_is_still_reading():
    @tg.kernel(out_shape=(tg.ShapeDtype((64, 8), tg.float32), tg.ShapeDtype((64, 8), tg.float32)),
               scratch_shapes=[tg.SMEM((64, 8), tg.float32)])
    def twice(x, by_tma, by_load, smem):
        smem[...] = x[...]
        tg.commit_smem()
        tg.copy_smem_to_gmem(smem, by_tma)
        by_load[...] = smem[...]          # a second reader while the TMA store may still read: no conflict
        tg.wait_smem_to_gmem(0)

    by_tma, by_load = twice(X, interpret=True)
    np.testing.assert_array_equal(by_tma, X)
    np.testing.assert_array_equal(by_load, X)
