"""mbarrier semantics: arrivals per warpgroup or warp, phases and parity, over-arrival, deadlock reports."""
import dataclasses

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.interpret import run_graph
from tilegemm.lang.arch import LIMITS
from tilegemm.lang.trace import trace_kernel
from tilegemm.lang.verify import verify
from tilegemm.showcase import random_inputs, relative_error

from .kernels import at_line, pipelined_matmul


def handoff(*, arrive_in_core_map, num_arrivals, wait=True, by_turn=False):
    """Warpgroup 0 writes SMEM and arrives on a barrier; warpgroup 1 waits for it and copies SMEM to the output.

    `by_turn`: warpgroup 0 arrives in the one turn of a loop that is its own (turn % 2 == wg), which the
    verifier cannot count statically, so that the interpreter's accounting is what is tested."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 8), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.SMEM((64, 8), tg.float32), tg.Barrier(num_arrivals=num_arrivals)])
    def kernel(x, y, smem, ready):
        wg = tg.axis_index("wg")

        @tg.when(wg == 0)
        def _():
            smem[...] = x[...]  # line: handoff write
            if arrive_in_core_map:
                @tg.core_map(tg.WarpMesh(axis_name="warp"))
                def _():
                    tg.barrier_arrive(ready)
            elif by_turn:
                tg.fori_loop(0, 1, lambda turn, _: tg.when(turn % 2 == wg)(lambda: tg.barrier_arrive(ready)), None)
            else:
                tg.barrier_arrive(ready)

        @tg.when(wg == 1)
        def _():
            if wait:
                tg.barrier_wait(ready)  # line: handoff wait
            y[...] = smem[...]  # line: handoff read
    return kernel


X = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)


def test_a_warpgroup_arrives_once():
    np.testing.assert_array_equal(handoff(arrive_in_core_map=False, num_arrivals=1)(X, interpret=True), X)


def test_inside_core_map_each_of_the_four_warps_arrives():
    np.testing.assert_array_equal(handoff(arrive_in_core_map=True, num_arrivals=4)(X, interpret=True), X)


def test_a_barrier_expecting_more_arrivals_than_come_deadlocks_at_the_wait():
    with pytest.raises(tg.DeadlockError) as err:
        handoff(arrive_in_core_map=False, num_arrivals=4, by_turn=True)(X, interpret=True)
    report = str(err.value)
    assert f"block (x=0) thread wg=1: barrier_wait at {at_line('handoff wait', __file__)}" in report
    assert "phase 0 has 1 of 4 arrivals" in report
    assert "finished: block (x=0) thread wg=0" in report


def test_reading_what_another_warpgroup_wrote_without_waiting_is_a_race():
    with pytest.raises(tg.RaceError) as err:
        handoff(arrive_in_core_map=False, num_arrivals=1, wait=False)(X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('handoff read', __file__)}: load (block (x=0) thread wg=1) reads SMEM")
    assert f"the store at {at_line('handoff write', __file__)}" in message and "nothing orders the two" in message


def test_explicit_parity_waits_follow_the_phases():
    m, n, k = 128, 64, 320  # five steps through two stages: every stage is reused
    a, b = random_inputs(m, n, k, tg.float16)
    c = pipelined_matmul(m, n, k, wait="explicit")(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_a_wrong_explicit_parity_returns_too_early_and_races():
    m, n, k = 64, 64, 128
    with pytest.raises(tg.RaceError) as err:
        pipelined_matmul(m, n, k, wait="wrong")(*random_inputs(m, n, k, tg.float16), interpret=True)
    message = str(err.value)
    assert message.startswith(at_line("wgmma"))
    assert f"copy_gmem_to_smem at {at_line('copy b')}" in message


def test_one_arrival_too_many_in_a_phase_is_reported_as_over_arrival():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 8), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.SMEM((2, 64, 8), tg.float32), tg.Barrier(num_arrivals=1)])
    def by_turns(x, y, smem, loaded):
        wg = tg.axis_index("wg")

        def turn(i, _):
            @tg.when(i == wg)  # warpgroup i copies in turn i: who arrives depends on the turn, which only the
            def _():           # interpreter follows
                tg.copy_gmem_to_smem(x, smem.at[wg], loaded)  # line: turn copy
        tg.fori_loop(0, 2, turn, None)
        tg.barrier_wait(loaded)

    with pytest.raises(tg.KernelError, match="over-arrival") as err:
        by_turns(X, interpret=True)
    assert str(err.value).startswith(at_line("turn copy", __file__))
    assert [(what, str(where)) for what, where in err.value.related[:1]] == [
        ("an arrival of this phase", at_line("turn copy", __file__))]


def test_declaring_more_arrivals_than_copies_deadlocks_at_the_wait():
    m, n, k = 64, 64, 64
    with pytest.raises(tg.DeadlockError) as err:
        pipelined_matmul(m, n, k, arrivals=3)(*random_inputs(m, n, k, tg.float16), interpret=True)
    report = str(err.value)
    assert f"block (m=0, n=0) thread 0: barrier_wait at {at_line('wait')}" in report
    assert "phase 0 has 2 of 3 arrivals" in report


def test_the_deadlock_report_names_every_blocked_warp():
    @tg.kernel(out_shape=tg.ShapeDtype((8,), tg.float32), scratch_shapes=[tg.Barrier(num_arrivals=1)])
    def stuck(y, never):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            @tg.when(tg.axis_index("warp") >= 2)
            def _():
                tg.barrier_wait(never)

    with pytest.raises(tg.DeadlockError) as err:
        stuck(interpret=True)
    lines = str(err.value).splitlines()
    assert [line.split(":")[0].strip() for line in lines[1:4]] == [
        "block (x=0) thread 0 [warp 2]", "block (x=0) thread 0 [warp 3]", "block (x=0) thread 0"]
    assert "waits for its 4 warps" in lines[3]
    assert "finished: block (x=0) thread 0 [warp 0]" not in lines  # finished warps are not listed as blocked


def phases_across_core_map(*, waiting_warps):
    """Two phases of `ready`: the first awaited inside a core_map by `waiting_warps` warps, the second by the
    whole warpgroup; `ack` keeps the producer from completing the second phase before the first was seen."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 8), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.Barrier(num_arrivals=1), tg.Barrier(num_arrivals=1)])
    def kernel(x, y, ready, ack):
        wg = tg.axis_index("wg")

        @tg.when(wg == 0)
        def _():
            tg.barrier_arrive(ready)
            tg.barrier_wait(ack)
            tg.barrier_arrive(ready)

        @tg.when(wg == 1)
        def _():
            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _():
                @tg.when(tg.axis_index("warp") < waiting_warps)
                def _():
                    tg.barrier_wait(ready)
            tg.barrier_arrive(ack)
            tg.barrier_wait(ready)  # line: warpgroup wait
            y[...] = x[...]
    return kernel


def test_a_warpgroup_wait_continues_the_phases_its_warps_counted_inside_core_map():
    x = np.arange(512, dtype=np.float32).reshape(64, 8)
    np.testing.assert_array_equal(phases_across_core_map(waiting_warps=4)(x, interpret=True), x)


def test_warps_that_disagree_on_a_barriers_phase_are_reported():
    x = np.zeros((64, 8), np.float32)
    with pytest.raises(tg.KernelError, match="disagree on the phase") as err:
        phases_across_core_map(waiting_warps=1)(x, interpret=True)
    assert str(err.value).startswith(at_line("warpgroup wait", __file__))


def test_a_barrier_two_phases_ahead_of_an_implicit_wait_is_reported():
    @tg.kernel(out_shape=tg.ShapeDtype((8,), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.Barrier(num_arrivals=1)])
    def unthrottled(y, ready):
        wg = tg.axis_index("wg")

        @tg.when(wg == 0)
        def _():
            tg.fori_loop(0, 2, lambda i, _: tg.barrier_arrive(ready), None)  # line: unthrottled arrive

        @tg.when(wg == 1)
        def _():
            tg.fori_loop(0, 2, lambda i, _: tg.barrier_wait(ready), None)  # line: overtaken wait

    with pytest.raises(tg.KernelError) as err:  # the default schedule runs warpgroup 0 to its end first
        unthrottled(interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('overtaken wait', __file__)}: barrier 'ready'[0] of block (x=0)")
    assert "has completed phase 1 while this thread still waits for phase 0" in message
    assert [(what, str(where)) for what, where in err.value.related] == [
        ("an arrival of the later phase", at_line("unthrottled arrive", __file__))]


def test_a_phase_expecting_more_than_2_20_minus_1_transaction_bytes_is_reported():
    @tg.kernel(out_shape=tg.ShapeDtype((8,), tg.float32),
               scratch_shapes=[tg.SMEM((4, 256, 256), tg.float32), tg.Barrier(num_arrivals=4)])
    def one_mebibyte(x, y, smem, loaded):
        for stage in range(4):
            tg.copy_gmem_to_smem(x, smem.at[stage], loaded)  # line: quarter mebibyte
        tg.barrier_wait(loaded)

    x = np.zeros((256, 256), np.float32)
    # 4 x 256 KiB is more shared memory than today's blocks have: verify it for a block with 2 MiB.
    graph = trace_kernel(one_mebibyte.body, name="one_mebibyte", config=one_mebibyte.config,
                         in_specs=(tg.ShapeDtype(x.shape, x.dtype),), out_specs=one_mebibyte.out_specs,
                         scratch_shapes=one_mebibyte.scratch_shapes, static_kwargs={})
    verify(graph, "sm_90a", dataclasses.replace(LIMITS["sm_90a"], smem_per_block=2 * 1024 * 1024,
                                                smem_per_sm=2 * 1024 * 1024))
    with pytest.raises(tg.KernelError) as err:
        run_graph(graph, [x])
    message = str(err.value)
    assert message.startswith(f"{at_line('quarter mebibyte', __file__)}: copy_gmem_to_smem makes phase 0 of barrier")
    assert "count 1048576 transaction bytes" in message and "at most 1048575 bytes (2^20 - 1" in message
