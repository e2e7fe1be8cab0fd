"""When a block ends, every asynchronous operation it started or that writes to it must have been waited for;
whatever is still pending is reported at the line that started it."""
import numpy as np
import pytest

import tilegemm as tg

from .kernels import at_line

F16 = tg.float16
X = np.arange(64 * 64).reshape(64, 64).astype(np.float16)
PAIR = dict(grid=(1,), grid_names=("g",), cluster=(2,), cluster_names=("x",))


def operand(rows, cols):
    return tg.SMEM((rows, cols), F16, transforms=tg.mma_transforms(cols, F16))


def tma_store(*, wait, in_core_map=False):
    """Copies x to y through SMEM with a TMA store, issued by the warpgroup or by warp 0 of a core_map."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), F16), scratch_shapes=[tg.SMEM((64, 64), F16)])
    def kernel(x, y, smem):
        smem[...] = x[...]
        tg.commit_smem()
        if in_core_map:
            @tg.core_map(tg.WarpMesh(axis_name="warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)
                def _():
                    tg.copy_smem_to_gmem(smem, y)
        else:
            tg.copy_smem_to_gmem(smem, y)  # line: unwaited store
        if wait:
            tg.wait_smem_to_gmem(0)
    return kernel


def test_a_tma_store_not_waited_for_before_the_end_is_reported_at_the_store():
    np.testing.assert_array_equal(tma_store(wait=True)(X, interpret=True), X)
    with pytest.raises(tg.RaceError) as err:
        tma_store(wait=False)(X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('unwaited store', __file__)}: the copy_smem_to_gmem (block (x=0) thread 0)")
    assert "still reads SMEM" in message and "tg.wait_smem_to_gmem(0)" in message


def test_a_warpgroup_wait_covers_the_tma_stores_its_warps_issued():
    np.testing.assert_array_equal(tma_store(wait=True, in_core_map=True)(X, interpret=True), X)
    with pytest.raises(tg.RaceError, match="no tg.wait_smem_to_gmem covers its bulk group"):
        tma_store(wait=False, in_core_map=True)(X, interpret=True)


def test_a_wgmma_never_retired_is_reported_at_the_wgmma():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32),
               scratch_shapes=[operand(64, 64), operand(64, 64), tg.Barrier(num_arrivals=2), tg.ACC((64, 64))])
    def unretired(a, b, c, a_smem, b_smem, loaded, acc):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)  # line: unretired wgmma

    with pytest.raises(tg.RaceError) as err:
        unretired(X, X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('unretired wgmma', __file__)}: the wgmma ")
    assert "still in flight when its warpgroup ends" in message and "tg.wgmma_wait(0)" in message


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_a_tma_load_no_thread_waits_for_is_reported_under_every_schedule(seed):
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), F16),
               scratch_shapes=[tg.SMEM((64, 64), F16), tg.Barrier(num_arrivals=1)])
    def prefetch(x, y, smem, loaded):
        tg.copy_gmem_to_smem(x, smem, loaded)  # line: unwaited load
        y[...] = x[...]

    with pytest.raises(tg.RaceError) as err:
        prefetch(X, interpret=True, seed=seed)
    message = str(err.value)
    assert message.startswith(f"{at_line('unwaited load', __file__)}: the copy_gmem_to_smem ")
    assert "no thread of block (x=0) waits for that phase before the block ends" in message


def tcgen05_kernel(*, commit, wait_commit, load_tmem=False, wait_load=True):
    """One 128x64x64 tcgen05 MMA whose completion is tracked by a commit (or by nothing), then optionally a
    TMEM load of the accumulator."""
    @tg.kernel(out_shape=tg.ShapeDtype((128, 64), tg.float32),
               scratch_shapes=[operand(128, 64), operand(64, 64), tg.TMEM((128, 64), tg.float32),
                               tg.Barrier(num_arrivals=2), tg.Barrier(orders_tensor_core=True)])
    def kernel(a, b, c, a_smem, b_smem, acc, loaded, mma_done):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.tcgen05_mma(acc, a_smem, b_smem, accumulate=False)  # line: untracked mma
        if commit:
            tg.tcgen05_commit_arrive(mma_done)  # line: unwaited commit
        if wait_commit:
            tg.barrier_wait(mma_done)
        if load_tmem:
            tg.async_load_tmem(acc)  # line: unwaited tmem load
            if wait_load:
                tg.wait_load_tmem()
    return kernel


A = np.ones((128, 64), np.float16)


def test_a_tcgen05_mma_no_barrier_tracks_is_reported_at_the_mma():
    tcgen05_kernel(commit=True, wait_commit=True)(A, X, interpret=True)
    with pytest.raises(tg.RaceError) as err:
        tcgen05_kernel(commit=False, wait_commit=False)(A, X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('untracked mma', __file__)}: the tcgen05_mma ")
    assert "Give the MMA a barrier (or follow it with tg.tcgen05_commit_arrive)" in message


def test_a_tcgen05_commit_no_thread_waits_for_is_reported_at_the_commit():
    with pytest.raises(tg.RaceError) as err:
        tcgen05_kernel(commit=True, wait_commit=False)(A, X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('unwaited commit', __file__)}: the tcgen05_commit_arrive ")
    assert "no thread of that block waits for that arrival before the block ends" in message


def test_a_tmem_load_not_waited_for_before_the_end_is_reported_at_the_load():
    tcgen05_kernel(commit=True, wait_commit=True, load_tmem=True)(A, X, interpret=True)
    with pytest.raises(tg.RaceError) as err:
        tcgen05_kernel(commit=True, wait_commit=True, load_tmem=True, wait_load=False)(A, X, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('unwaited tmem load', __file__)}: the async_load_tmem ")
    assert "Call tg.wait_load_tmem() after the load" in message


def pair_mma(*, follower_waits):
    """A 2-CTA MMA: each block loads its halves, the leader issues the MMA and a commit to both blocks."""
    @tg.kernel(out_shape=tg.ShapeDtype((256, 32), tg.float32), **PAIR,
               scratch_shapes=[operand(128, 64), operand(64, 16), tg.TMEM((128, 32), tg.float32, collective=True),
                               tg.Barrier(num_arrivals=2), tg.ClusterBarrier(collective_axes="x"),
                               tg.Barrier(orders_tensor_core=True)])
    def kernel(a, b, c, a_smem, b_smem, acc, loaded, landed, mma_done):
        leader = tg.axis_index("x") == 0
        tg.copy_gmem_to_smem(a, a_smem, loaded, collective_axes="x", partitioned_axis=0)
        tg.copy_gmem_to_smem(b, b_smem, loaded, collective_axes="x", partitioned_axis=1)

        @tg.when(leader)
        def _():
            tg.barrier_wait(loaded)
        tg.barrier_arrive(landed)  # the follower learns that both halves landed
        tg.barrier_wait(landed)

        @tg.when(leader)
        def _():
            tg.tcgen05_mma(acc, a_smem, b_smem, accumulate=False, collective_axis="x")
            tg.tcgen05_commit_arrive(mma_done, collective_axis="x")  # line: pair commit

        @tg.when(leader | follower_waits)
        def _():
            tg.barrier_wait(mma_done)
    return kernel


def test_the_follower_of_a_pair_must_wait_for_the_mma_writing_its_tmem():
    a, b = np.ones((256, 64), np.float16), np.ones((64, 32), np.float16)
    pair_mma(follower_waits=True)(a, b, interpret=True)
    with pytest.raises(tg.RaceError) as err:
        pair_mma(follower_waits=False)(a, b, interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('pair commit', __file__)}: the tcgen05_commit_arrive ")
    assert "arrives on a barrier of block (g=0, x=1), but no thread of that block waits" in message
