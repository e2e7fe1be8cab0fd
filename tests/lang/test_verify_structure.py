"""Verifier and tracer: core_map bodies, scopes, indices into scratch refs, cluster axes."""
import pytest

import tilegemm as tg

from .helpers import F16, raises_at, spec, trace


def test_array_math_inside_a_warp_core_map_is_rejected():
    def body(x, out, acc):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))  # @core_map
        def _():
            acc[...] = acc[...] * 2.0  # @math

    with raises_at("math", "cannot run inside a WarpMesh core_map", "Move the array work outside") as err:
        trace(body, spec(128, 128), scratch=[tg.ACC((64, 64))])
    err.names("core_map", "the core_map starts at")


def test_scalar_work_and_single_lane_ops_inside_a_core_map_verify():
    def body(x, out, bar):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            @tg.when(tg.axis_index("warp") == 0)
            def _():
                tg.barrier_arrive(bar.at[0])

    trace(body, spec(128, 128), scratch=[tg.Barrier()])


def test_a_scoped_ref_used_after_its_scope_is_rejected():
    leaked = []

    def body(x, out):
        tg.run_scoped(leaked.append, tg.SMEM((64, 64), F16))  # @scoped
        leaked[0][...]  # @outside

    with raises_at("outside", "out of scope here", "refs from tg.run_scoped") as err:
        trace(body, spec(128, 128))
    err.names("scoped", "the value was defined at")


def test_a_loop_value_used_after_the_loop_is_rejected():
    leaked = []

    def body(x, out, ref):
        tg.fori_loop(0, 2, lambda i, c: leaked.append(i * 64), None)
        ref.at[tg.ds(leaked[0], 64)]  # @after_loop

    with raises_at("after_loop", "uses a i32 that is out of scope here"):
        trace(body, spec(128, 128), scratch=[tg.SMEM((128, 64), F16)])


def test_a_value_from_another_trace_is_rejected():
    captured = []
    trace(lambda x, out, ref: captured.append(ref), spec(128, 128), scratch=[tg.SMEM((64, 64), F16)])  # @first

    def body(x, out):
        captured[0][...]  # @second

    with raises_at("second", "a value from another kernel trace (defined at", "only live inside the kernel trace"):
        trace(body, spec(128, 128))


def test_a_static_barrier_index_out_of_range_names_the_allocation():
    def body(x, out, bars):
        tg.barrier_wait(bars.at[3])  # @static_index

    with raises_at("static_index", "barrier index 3 is out of range", "num_barriers=3 (indices 0..2)",
                   "declare num_barriers=4") as err:
        trace(body, spec(128, 128), scratch=[tg.Barrier(num_barriers=3)])  # @bars
    err.names("bars", "the barriers are declared at")


def test_a_dynamic_barrier_index_that_can_leave_the_array_names_the_allocation():
    def body(x, out, bars):
        tg.fori_loop(0, 8, lambda ki, c: tg.barrier_wait(bars.at[ki % 4]), None)  # @rem_index

    with raises_at("rem_index", "this barrier index can be 3 (it is taken % 4)", "num_barriers=3 (indices 0..2)",
                   "use % 3 or declare num_barriers=4") as err:
        trace(body, spec(128, 128), scratch=[tg.Barrier(num_barriers=3)])  # @bars3
    err.names("bars3", "allocated at")


def test_a_dynamic_stage_index_that_can_leave_the_buffer():
    def body(x, out, stages):
        def step(ki, carry):
            stages.at[tg.minimum(ki, 2) % 4][...] = tg.zeros((64, 64), F16)  # @stage
        tg.fori_loop(0, 8, step, None)

    with raises_at("stage", "index in dimension 0 can be 2", "size 2 there", "keep it below 2"):
        trace(body, spec(128, 128), scratch=[tg.SMEM((2, 64, 64), F16)])


def test_dynamic_indices_within_bounds_verify():
    def body(x, out, stages, bars):
        def step(ki, c):
            slot = ki % 3
            tg.barrier_wait(bars.at[slot])
            stages.at[slot, tg.ds((ki % 2) * 32, 32)][...]
        tg.fori_loop(0, 8, step, None)

    trace(body, spec(128, 128), scratch=[tg.SMEM((3, 64, 64), F16), tg.Barrier(num_barriers=3)])


def test_multicast_axes_must_be_cluster_axes():
    def body(a, out, dst, bar):
        tg.copy_gmem_to_smem(a.at[0:64, 0:64], dst, bar.at[0], collective_axes="y")  # @multicast

    with raises_at("multicast", "collective_axes names 'y', which is not a cluster axis", "cluster axes: cx"):
        trace(body, spec(128, 128), scratch=[tg.SMEM((64, 64), F16), tg.Barrier()], cluster=(2,))


def test_cluster_barrier_axes_must_be_cluster_axes():
    with raises_at("cluster_bar", "ClusterBarrier collective_axes names 'pair'", "none (declare cluster="):
        trace(lambda x, out, bar: None, spec(128, 128),
              scratch=[tg.ClusterBarrier(collective_axes=("pair",))])  # @cluster_bar


@pytest.mark.parametrize("src_rows, cluster, fragment", [
    (128, (2,), "the source (128, 64) must be twice the destination (128, 64) there"),
    (256, (4,), "over the 2 blocks of one cluster axis"),
])
def test_partitioned_copies_split_a_source_twice_the_destination(src_rows, cluster, fragment):
    def body(a, out, dst, bar):
        tg.copy_gmem_to_smem(a.at[0:src_rows], dst, bar.at[0], collective_axes="cx", partitioned_axis=0)  # @part

    with raises_at("part", fragment):
        trace(body, spec(256, 64), scratch=[tg.SMEM((128, 64), F16), tg.Barrier()], cluster=cluster)
