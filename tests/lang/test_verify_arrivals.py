"""Verifier: barrier accounting. One run of the code arriving on a barrier makes the arrivals of one phase,
counted over the threads, warps and blocks that run it; collective copies are issued by every block."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace

PAIR = dict(cluster=(2,), cluster_names=("pair",))


def two_copies(num_arrivals):
    """A K loop loading an A and a B tile per step onto one barrier element of a ring of two."""
    def body(a, out, a_smem, b_smem, loaded):
        def step(k, _):
            slot = k % 2
            tg.copy_gmem_to_smem(a.at[:, tg.ds(k * 64, 64)], a_smem.at[slot], loaded.at[slot])  # @copy_a
            tg.copy_gmem_to_smem(a.at[:, tg.ds(k * 64, 64)], b_smem.at[slot], loaded.at[slot])  # @copy_b
            tg.barrier_wait(loaded.at[slot])
        tg.fori_loop(0, 4, step, None)
    return trace(body, spec(64, 256), scratch=[tg.SMEM((2, 64, 64), F16), tg.SMEM((2, 64, 64), F16),
                                               tg.Barrier(num_arrivals=num_arrivals, num_barriers=2)])  # @loaded


def test_copies_of_one_step_make_one_phase():
    two_copies(num_arrivals=2)


def test_more_copies_a_step_than_a_phase_takes_over_arrive():
    with raises_at("copy_a", "barrier 'loaded' completes a phase after 1 arrival(s)", "makes 2", "over-arrives",
                   "Declare num_arrivals=2") as err:
        two_copies(num_arrivals=1)
    err.names("loaded", "the barrier is declared at")
    err.names("copy_b", "an arrival site of the group")


def test_fewer_arrivals_than_a_phase_takes_from_the_only_arriving_code_is_rejected():
    with raises_at("copy_a", "completes a phase after 3 arrival(s)", "makes 2", "its waiters would wait forever",
                   "Declare num_arrivals=2"):
        two_copies(num_arrivals=3)


def arrive(num_arrivals, in_core_map=False, num_threads=2, cluster_barrier=False):
    """Warpgroups (or their warps) arrive on `done` where tg.when(wg > 0) lets them; warpgroup 0 waits."""
    def body(x, out, done):
        wg = tg.axis_index("wg")

        @tg.when(wg > 0)
        def _():
            if in_core_map:
                tg.core_map(tg.WarpMesh(axis_name="warp"))(lambda: tg.barrier_arrive(done))  # @warp_arrive
            else:
                tg.barrier_arrive(done)  # @arrive

        @tg.when(wg == 0)
        def _():
            tg.barrier_wait(done)
    barrier = (tg.ClusterBarrier(collective_axes="pair", num_arrivals=num_arrivals) if cluster_barrier else
               tg.Barrier(num_arrivals=num_arrivals))
    return trace(body, spec(8, 8), scratch=[barrier], num_threads=num_threads, thread_name="wg",
                 **(PAIR if cluster_barrier else {}))


def test_arrivals_count_the_warpgroups_that_run_them():
    arrive(num_arrivals=2, num_threads=3)
    with raises_at("arrive", "completes a phase after 1 arrival(s)", "makes 2"):
        arrive(num_arrivals=1, num_threads=3)


def test_inside_a_core_map_each_warp_arrives():
    arrive(num_arrivals=4, in_core_map=True)
    with raises_at("warp_arrive", "completes a phase after 1 arrival(s)", "makes 4"):
        arrive(num_arrivals=1, in_core_map=True)


def test_a_cluster_barrier_counts_the_arrivals_of_every_block():
    arrive(num_arrivals=1, cluster_barrier=True)  # one warpgroup a block, two blocks: 2 = 1 x 2
    with raises_at("arrive", "barrier 'done' of block (pair=0) completes a phase after 4 arrival(s)", "makes 2",
                   "Declare num_arrivals=1"):
        arrive(num_arrivals=2, cluster_barrier=True)


def test_a_cluster_barrier_one_block_arrives_on_is_rejected():
    def body(x, out, everyone):
        @tg.when(tg.axis_index("pair") == 0)
        def _():
            tg.barrier_arrive(everyone)  # @leader_only
        tg.barrier_wait(everyone)

    with raises_at("leader_only", "completes a phase after 2 arrival(s)", "makes 1",
                   "Make every block of its group arrive alike"):
        trace(body, spec(8, 8), scratch=[tg.ClusterBarrier(collective_axes="pair")], **PAIR)


def test_arrivals_in_separate_places_may_share_a_phase():
    def body(x, out, done):
        wg = tg.axis_index("wg")

        @tg.when(wg == 0)
        def _():
            tg.barrier_arrive(done)

        @tg.when(wg == 1)
        def _():
            tg.barrier_arrive(done)
        tg.barrier_wait(done)
    trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=2)], num_threads=2, thread_name="wg")


def each_arrives_on_the_others(num_arrivals):
    """Two warpgroups take turns: each arrives on the other's element of `turn`, then waits on its own."""
    def body(x, out, turn):
        wg = tg.axis_index("wg")
        tg.barrier_arrive(turn.at[1 - wg])  # @arrive_other
        tg.barrier_wait(turn.at[wg])
    trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=num_arrivals, num_barriers=2)], num_threads=2,
          thread_name="wg")


def test_an_index_computed_from_the_warpgroup_counts_each_element_apart():
    each_arrives_on_the_others(num_arrivals=1)   # turn[1] hears warpgroup 0 only, turn[0] warpgroup 1 only
    with raises_at("arrive_other", "completes a phase after 2 arrival(s)", "makes 1", "wait forever"):
        each_arrives_on_the_others(num_arrivals=2)


def test_an_element_named_through_a_view_of_a_view_is_counted():
    def body(x, out, done):
        pair = done.at[tg.ds(1, 2)]
        tg.barrier_arrive(pair.at[1])  # @arrive_nested
        tg.barrier_wait(done.at[2])
    trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=1, num_barriers=4)])
    with raises_at("arrive_nested", "completes a phase after 2 arrival(s)", "makes 1", "wait forever"):
        trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=2, num_barriers=4)])


def test_a_traced_index_into_a_view_of_a_view_is_left_to_the_interpreter():
    def body(x, out, done):
        tg.barrier_arrive(done.at[tg.ds(1, 2)].at[tg.axis_index("wg")])
    trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=3, num_barriers=4)], num_threads=2, thread_name="wg")


def test_who_arrives_by_loop_index_is_left_to_the_interpreter():
    def body(x, out, done):
        wg = tg.axis_index("wg")
        tg.fori_loop(0, 2, lambda i, _: tg.when(i == wg)(lambda: tg.barrier_arrive(done)), None)
    trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=3)], num_threads=2, thread_name="wg")


def operand(rows, cols):
    return tg.SMEM((rows, cols), F16, transforms=tg.mma_transforms(cols, F16))


def pair_mma(num_arrivals):
    """The leader of a pair issues a 2-CTA MMA whose completion arrives on `done` in both blocks."""
    def body(x, out, acc, a, b, done):
        @tg.when(tg.axis_index("pair") == 0)
        def _():
            tg.tcgen05_mma(acc, a, b, done, accumulate=False, collective_axis="pair")  # @pair_mma
        tg.barrier_wait(done)
    return trace(body, spec(8, 8), scratch=[tg.TMEM((128, 32), F32, collective=True), operand(128, 64),
                                            operand(64, 16), tg.Barrier(num_arrivals=num_arrivals,
                                                                        orders_tensor_core=True)], **PAIR)


def test_a_2cta_mma_arrives_once_in_each_block_of_the_pair():
    pair_mma(num_arrivals=1)
    with raises_at("pair_mma", "barrier 'done' of block (pair=0) completes a phase after 2 arrival(s)", "makes 1"):
        pair_mma(num_arrivals=2)


def collective_copy(guard, **copy):
    """Both blocks of a pair (or only those `guard` lets) issue one collective copy onto `loaded`: the halves of a
    128-row source (partitioned), or a 64-row tile for both (multicast)."""
    def body(a, out, half, loaded):
        src = a if copy else a.at[0:64]

        @tg.when(guard(tg.axis_index("pair")))
        def _():
            tg.copy_gmem_to_smem(src, half, loaded, collective_axes="pair", **copy)  # @collective
        tg.barrier_wait(loaded)
    return trace(body, spec(128, 64), scratch=[tg.SMEM((64, 64), F16), tg.Barrier()], **PAIR)


@pytest.mark.parametrize("kind, copy", [("partitioned", dict(partitioned_axis=0)), ("multicast", {})])
def test_a_collective_copy_is_issued_by_every_block_of_its_group(kind, copy):
    collective_copy(lambda rank: rank >= 0, **copy)
    with raises_at("collective", f"this {kind} copy along ('pair',) is issued by block (pair=0) but never by "
                   "block (pair=1)", "the missing part never lands"):
        collective_copy(lambda rank: rank == 0, **copy)
