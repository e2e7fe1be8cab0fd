"""Verifier: setmaxnreg counts ptxas accepts, moving registers in the direction they name."""
import pytest

import tilegemm as tg

from .helpers import raises_at, spec, trace


def reallocate(n, action, num_threads):
    """Traces a kernel of `num_threads` warpgroups whose every warpgroup calls set_max_registers(n, action)."""
    def body(x, out):
        tg.set_max_registers(n, action=action)  # @setmaxnreg
    return trace(body, spec(8, 8), num_threads=num_threads)


@pytest.mark.parametrize("n", [20, 100, 264])
def test_a_count_is_a_multiple_of_8_in_24_to_256(n):
    with raises_at("setmaxnreg", f"set_max_registers({n})", "a multiple of 8 in [24, 256]"):
        reallocate(n, "decrease", num_threads=1)


def test_counts_on_either_side_of_the_launch_share_verify():
    reallocate(40, "decrease", num_threads=3)
    reallocate(168, "decrease", num_threads=3)
    reallocate(168, "increase", num_threads=3)


def test_a_decrease_above_the_launch_share_is_refused_as_ptxas_would():
    with raises_at("setmaxnreg", "a block of 3 warpgroups (384 threads) starts each thread with 168 registers",
                   "ptxas refuses (C7406)", "decrease to at most 168"):
        reallocate(176, "decrease", num_threads=3)


def test_an_increase_below_the_launch_share_is_rejected():
    with raises_at("setmaxnreg", "a block of 4 warpgroups (512 threads) starts each thread with 128 registers",
                   "this would shrink", "increase to at least 128"):
        reallocate(120, "increase", num_threads=4)


def test_blocks_of_two_warpgroups_start_with_what_ptxas_allocates():
    reallocate(240, "decrease", num_threads=2)
    reallocate(24, "increase", num_threads=2)


def producer_and_consumers(producer, consumer, consumers=2):
    """A producer warpgroup decreasing to `producer` registers and `consumers` warpgroups increasing to `consumer`."""
    def body(x, out):
        wg = tg.axis_index("wg")

        @tg.when(wg == consumers)
        def _():
            tg.set_max_registers(producer, action="decrease")  # @producer

        @tg.when(wg < consumers)
        def _():
            tg.set_max_registers(consumer, action="increase")  # @consumers
    return trace(body, spec(8, 8), num_threads=consumers + 1, thread_name="wg")


def test_increases_within_what_the_decreases_released_verify():
    producer_and_consumers(40, 232)
    producer_and_consumers(24, 240)


def test_increases_beyond_what_the_decreases_released_would_wait_forever():
    with raises_at("consumers", "hold 240 + 240 + 40 = 520 registers per thread, more than the 504 (3 x 168)",
                   "the last increase would wait forever", "increase to 232 per thread") as err:
        producer_and_consumers(40, 240)
    err.names("producer", "set_max_registers(40, action='decrease') at")
