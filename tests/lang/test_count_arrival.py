"""tg.count_arrival: blocks hand partial results to the last of them to arrive at a GMEM counter, which reads them
all, without a second kernel; the counter must outlive the launch, and the interpreter catches a count that did not
start at 0."""
import numpy as np
import pytest

import tilegemm as tg

from .counter_kernels import BLOCKS, I32, X, last_block_sums_kernel
from .helpers import F32, raises_at, spec


def expected_sum():
    """What the last block sums: 2 * x[b], row by row in block order."""
    total = 2.0 * X[0]
    for i in range(1, BLOCKS):
        total = total + 2.0 * X[i]
    return total


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_the_last_block_to_arrive_reads_every_blocks_writes_and_leaves_the_counter_at_zero(seed):
    out, _, counters = last_block_sums_kernel()(X, np.zeros(1, np.int32), interpret=True, seed=seed)
    assert np.array_equal(out, expected_sum())
    assert counters.tolist() == [0]


def test_out_may_name_the_outputs_that_do_not_alias_an_input():
    target = np.empty((8, 64), np.float32)
    out, _, _ = last_block_sums_kernel()(X, np.zeros(1, np.int32), out=(target, None, None), interpret=True)
    assert out is target and np.array_equal(target, expected_sum())
    with pytest.raises(tg.ArgumentError, match=r"writes output\(s\) \[2\] into the inputs they alias"):
        last_block_sums_kernel()(X, np.zeros(1, np.int32), out=(None, None, np.zeros(1, np.int32)), interpret=True)


def test_a_counter_that_did_not_start_at_zero_is_an_error_in_the_interpreter():
    with pytest.raises(tg.KernelError, match=r"counter_kernels.py:\d+: count_arrival: the counter held 1 when "
                                             r"this launch first counted at it, not 0"):
        last_block_sums_kernel()(X, np.ones(1, np.int32), interpret=True)


def test_fewer_arrivals_than_declared_are_an_error_at_the_end_of_the_launch():
    with pytest.raises(tg.KernelError, match=r"the launch left its counter at 4, not 0: the warpgroups that "
                                             r"arrived are not a multiple of arrivals=5"):
        last_block_sums_kernel(arrivals=5)(X, np.zeros(1, np.int32), interpret=True)


def test_a_last_arrival_that_reads_a_row_not_yet_written_is_a_race():
    # arrivals=3 of 4 blocks: the third block is "last" and reads the fourth's row, which nothing has written yet
    with pytest.raises(tg.RaceError, match=r"store \(block \(b=3\) thread 0\) writes GMEM array \[3:4, 0:8, 0:64\], "
                                           r"but the load .* \(block \(b=2\) thread 0\), which reads it, and nothing "
                                           r"orders the two. Blocks order their GMEM accesses only through "
                                           r"tg.count_arrival"):
        last_block_sums_kernel(arrivals=3)(X, np.zeros(1, np.int32), interpret=True)


@pytest.mark.parametrize("seed", [None, 3])
def test_a_block_that_writes_after_it_arrives_races_with_the_last_arrivals_read(seed):
    with pytest.raises(tg.RaceError, match=r"GMEM array \[\d:\d, 0:8, 0:64\].*write before arriving"):
        last_block_sums_kernel(write_after_arrival=True)(X, np.zeros(1, np.int32), interpret=True, seed=seed)


def test_a_counter_must_be_an_input_updated_in_place():
    @tg.kernel(out_shape=(tg.ShapeDtype((64,), F32), tg.ShapeDtype((1,), I32)))
    def counts_in_an_output(x, out, counters):
        tg.count_arrival(counters.at[0], 2)   # @output
        out[...] = x[...]
    with raises_at("output", "count_arrival's counter is in kernel output 1 (", "input_output_aliases"):
        counts_in_an_output.trace(spec(64, dtype=F32))


@pytest.mark.parametrize("counter,arrivals,fragment", [
    (lambda c: c, 2, "index the counter array down to one element"),
    (lambda c: c.at[0], 0, "needs a static arrivals >= 1"),
])
def test_a_counter_is_one_int32_element_and_arrivals_a_static_count(counter, arrivals, fragment):
    def body(counters, counters_out):
        tg.count_arrival(counter(counters_out), arrivals)
    with pytest.raises(tg.KernelError, match=fragment):
        tg.kernel(body, out_shape=tg.ShapeDtype((2,), I32), input_output_aliases={0: 0}).trace(spec(2, dtype=I32))
