"""Clusters: multicast and partitioned TMA copies, and ClusterBarriers that count every block's arrivals."""
import numpy as np
import pytest

import tilegemm as tg

X = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
PAIR = dict(grid=(1,), grid_names=("g",), cluster=(2,), cluster_names=("x",))


def test_a_multicast_copy_delivers_the_whole_tile_to_every_block_of_the_cluster():
    @tg.kernel(out_shape=tg.ShapeDtype((2, 16, 8), tg.float32), **PAIR,
               scratch_shapes=[tg.SMEM((16, 8), tg.float32), tg.Barrier(num_arrivals=1)])
    def multicast(x, y, smem, loaded):
        tg.copy_gmem_to_smem(x, smem, loaded, collective_axes="x")  # each block fetches half, for both
        tg.barrier_wait(loaded)
        y[tg.axis_index("x")] = smem[...]

    np.testing.assert_array_equal(multicast(X, interpret=True), np.stack([X, X]))


def partitioned(follower_waits_on):
    """Each block of the pair loads its 8 rows of x; the leader's barrier tracks both halves."""
    @tg.kernel(out_shape=tg.ShapeDtype((16, 8), tg.float32), **PAIR,
               scratch_shapes=[tg.SMEM((8, 8), tg.float32), tg.Barrier(num_arrivals=1),
                               tg.ClusterBarrier(collective_axes="x", num_arrivals=1)])
    def kernel(x, y, half, loaded, landed):
        block = tg.axis_index("x")
        tg.copy_gmem_to_smem(x, half, loaded, collective_axes="x", partitioned_axis=0)

        @tg.when(block == 0)
        def _():
            tg.barrier_wait(loaded)       # both halves have landed

        @tg.when(block == 1)
        def _():
            if follower_waits_on == "loaded":
                tg.barrier_wait(loaded)   # tracks nothing in the follower
        tg.barrier_arrive(landed)         # every block arrives; the leader only once both halves landed
        tg.barrier_wait(landed)
        y[tg.ds(block * 8, 8), :] = half[...]
    return kernel


def test_a_partitioned_copy_gives_each_block_its_half():
    np.testing.assert_array_equal(partitioned("landed")(X, interpret=True), X)


def test_the_follower_of_a_partitioned_copy_cannot_wait_on_its_own_barrier():
    with pytest.raises(tg.DeadlockError, match=r"block \(g=0, x=1\) thread 0: barrier_wait .* 0 phase\(s\)"):
        partitioned("loaded")(X, interpret=True)


def test_a_cluster_barrier_completes_after_every_block_arrived():
    @tg.kernel(out_shape=tg.ShapeDtype((2, 8), tg.float32), **PAIR,
               scratch_shapes=[tg.ClusterBarrier(collective_axes="x", num_arrivals=1)])
    def rendezvous(y, everyone):
        block = tg.axis_index("x")

        @tg.when(block == tg.axis_index("g"))  # which block arrives depends on the grid coordinate (g=0): the
        def _():                               # verifier cannot count it, the interpreter can
            tg.barrier_arrive(everyone)
        tg.barrier_wait(everyone)
        y[tg.ds(block, 1), :] = tg.full((1, 8), 1.0, tg.float32)

    with pytest.raises(tg.DeadlockError) as err:  # block 1 never arrives: both blocks wait for it
        rendezvous(interpret=True)
    assert "phase 0 has 1 of 2 arrivals" in str(err.value)
