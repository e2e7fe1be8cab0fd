"""Scalars read at run time (`idx[i]`) in the interpreter: each use of them as an index, a condition or a loop
bound against numpy; TMA's clipping of coordinates read out of range; the value memory holds when the read runs."""
import numpy as np
import pytest

import tilegemm as tg

from .kernels import at_line
from .scalar_kernels import CASES, F16, T, matches


@pytest.mark.parametrize("case", CASES)
def test_the_interpreter_computes_what_numpy_does(case):
    kernel, inputs, expected = CASES[case]()
    assert matches(kernel(*inputs, interpret=True), expected)


def test_a_scalar_read_past_either_end_of_its_array_is_zero():
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), F16), scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def nested(a, idx, c, a_smem, loaded):
        tg.copy_gmem_to_smem(a.at[idx[idx[0]]], a_smem, loaded)   # idx[0] indexes idx itself
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c)
        tg.wait_smem_to_gmem(0)

    a = np.random.default_rng(0).standard_normal((4, T, T)).astype(np.float16)
    for first, expected in ((2, a[3]), (-1, a[0]), (7, a[0])):     # idx[-1], idx[7]: 0
        assert matches(nested(a, np.array([first, 1, 3], np.int32), interpret=True), expected)


def test_a_barrier_index_read_out_of_range_is_an_error_at_its_line():
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), F16),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1, num_barriers=2)])
    def picked_barrier(a, idx, c, a_smem, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded.at[idx[0]])  # line: barrier
        tg.barrier_wait(loaded.at[idx[0]])
        tg.copy_smem_to_gmem(a_smem, c)
        tg.wait_smem_to_gmem(0)

    a = np.ones((T, T), np.float16)
    assert matches(picked_barrier(a, np.array([1], np.int32), interpret=True), a.astype(np.float64))
    with pytest.raises(tg.KernelError) as err:
        picked_barrier(a, np.array([2], np.int32), interpret=True)
    assert str(err.value).startswith(f"{at_line('barrier', __file__)}: index out of bounds at run time: [2, 3)")


def test_reading_an_smem_scalar_before_waiting_for_its_tma_copy_is_a_race():
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), F16),
               scratch_shapes=[tg.SMEM((4,), tg.int32), tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1),
                               tg.Barrier(num_arrivals=1)])
    def unwaited(a, idx, c, idx_smem, a_smem, idx_loaded, loaded):
        tg.copy_gmem_to_smem(idx, idx_smem, idx_loaded)  # line: copy
        first = idx_smem[0]  # line: read
        tg.barrier_wait(idx_loaded)
        tg.copy_gmem_to_smem(a.at[first], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c)
        tg.wait_smem_to_gmem(0)

    with pytest.raises(tg.RaceError) as err:
        unwaited(np.ones((2, T, T), np.float16), np.zeros(4, np.int32), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('read', __file__)}: load_scalar")
    assert f"the copy_gmem_to_smem at {at_line('copy', __file__)}" in message and "tg.barrier_wait" in message
