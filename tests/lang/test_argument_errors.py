"""Arguments no kernel can mean are refused at the user's line, as tg.KernelError, while tracing."""
import tilegemm as tg

from .helpers import F32, raises_at, spec, trace


def test_an_empty_ref_slice():
    def body(x, out):
        out.at[5:3]  # @empty_ref_slice

    with raises_at("empty_ref_slice", "the slice 5:3 of dimension 0 (size 128) is empty"):
        trace(body, spec(128, 128))


def test_register_array_slices_stay_inside_the_array():
    def body(x, out, acc):
        acc[...][tg.ds(32, 64), :]  # @past_the_end

    with raises_at("past_the_end", "ds(32, 64) is out of bounds for a dimension of size 64"):
        trace(body, spec(128, 128), scratch=[tg.ACC((64, 64))])


def test_where_needs_an_array():
    def body(x, out):
        tg.where(tg.axis_index("x") == 0, 1, 2)  # @scalar_where

    with raises_at("scalar_where", "tg.where selects between register arrays", "tg.select"):
        trace(body, spec(128, 128))


def test_nd_loop_needs_collective_axes():
    def body(x, out):
        @tg.nd_loop((4,), collective_axes=())  # @no_axes
        def _(info):
            pass

    with raises_at("no_axes", "nd_loop needs collective_axes"):
        trace(body, spec(128, 128))


def test_an_explicit_phase_is_a_parity():
    def body(x, out, bar):
        tg.barrier_wait(bar, phase=2.5)  # @float_phase

    with raises_at("float_phase", "phase must be a parity", "2.5"):
        trace(body, spec(128, 128), scratch=[tg.Barrier()])


def test_static_arguments_must_be_hashable():
    kernel = tg.kernel(lambda x, out, *, table: None, out_shape=spec(8, 8, dtype=F32))
    with raises_at("unhashable", "static keyword arguments", "must be hashable"):
        kernel.trace(spec(8, 8), table=[1, 2])  # @unhashable


def test_cluster_barriers_take_pallas_keywords_and_name_their_axes():
    import pytest
    with pytest.raises(TypeError):
        tg.ClusterBarrier(("x",), 4)          # Pallas's ClusterBarrier is keyword-only too
    with pytest.raises(TypeError):
        tg.ClusterBarrier(num_barriers=2)     # collective_axes has no default
    bar = tg.ClusterBarrier(collective_axes="x", num_barriers=4)
    assert (bar.num_barriers, bar.num_arrivals) == (4, 1)


def test_launch_configuration_errors_point_at_the_kernel_definition():
    with raises_at("names", "grid (2,) has 1 axes but grid_names ('a', 'b') names 2"):
        tg.kernel(lambda x, out: None, out_shape=spec(8, 8), grid=(2,), grid_names=("a", "b"))  # @names
    with raises_at("out_shape", "out_shape must be a tg.ShapeDtype or a tuple/list of them, got tuple (64, 64)"):
        tg.kernel(lambda x, out: None, out_shape=(64, 64))  # @out_shape
