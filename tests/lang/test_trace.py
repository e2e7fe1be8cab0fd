"""Tracing: kernel(...).trace builds a verified Graph once per (shapes, dtypes, static arguments)."""
import pydoc

import numpy as np
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec


def copy_kernel(out_shape=spec(64, 64, dtype=F32)):
    """A kernel whose body counts its traces and takes a static `scale` keyword."""
    calls = []

    def body(x, out, scale=1.0):
        calls.append(scale)
        out.at[0:x.shape[0]][...] = (x[...] * scale).astype(F32)

    return tg.kernel(body, out_shape=out_shape), calls


def test_tracing_is_cached_per_shapes_and_dtypes():
    kernel, calls = copy_kernel(out_shape=lambda x: spec(64, 64, dtype=F32))
    first = kernel.trace(spec(64, 64, dtype=F32))
    assert kernel.trace(spec(64, 64, dtype=F32)) is first
    assert kernel.trace(np.zeros((64, 64), np.float32)) is first, "arrays and ShapeDtypes share the cache"
    assert len(calls) == 1
    assert kernel.trace(spec(32, 64, dtype=F32)) is not first
    assert kernel.trace(spec(64, 64, dtype=F16)) is not first
    assert len(calls) == 3


def test_a_kernel_with_a_fixed_out_shape_serves_the_input_shapes_it_first_met():
    kernel, calls = copy_kernel()
    kernel.trace(spec(64, 64, dtype=F32))
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `body` is f32\[32, 64\] but the "
                                               r"kernel was built for f32\[64, 64\]"):
        kernel.trace(spec(32, 64, dtype=F32))
    with pytest.raises(tg.ArgumentError, match=r"is f16\[64, 64\] but the kernel was built for f32\[64, 64\]"):
        kernel(np.zeros((64, 64), np.float16), interpret=True)
    assert len(calls) == 1


def test_declared_input_specs_are_enforced_from_the_first_call():
    body = lambda x, out: None  # noqa: E731
    kernel = tg.kernel(body, out_shape=spec(8, 8, dtype=F32), in_specs=[spec(8, 8, dtype=F32)])
    with pytest.raises(tg.ArgumentError, match=r"is f32\[8, 16\] but the kernel was built for f32\[8, 8\]"):
        kernel.trace(spec(8, 16, dtype=F32))


def test_static_keyword_arguments_are_part_of_the_cache_key():
    kernel, calls = copy_kernel()
    half = kernel.trace(spec(64, 64, dtype=F32), scale=0.5)
    assert kernel.trace(spec(64, 64, dtype=F32), scale=0.5) is half
    double = kernel.trace(spec(64, 64, dtype=F32), scale=2.0)
    assert double is not half and calls == [0.5, 2.0]
    assert "0.5" in str(half) and "2.0" in str(double)


def test_the_graph_records_parameters_and_config():
    graph = tg.kernel(lambda a, b, out: None, out_shape=spec(64, 32), grid=(4, 2), grid_names=("m", "n"),
                      cluster=(2,), cluster_names=("pair",), num_threads=3, thread_name="wg"
                      ).trace(spec(64, 16), spec(16, 32, dtype=tg.bfloat16))
    assert [str(v.type) for v in graph.inputs] == ["gmem<64x16xf16>", "gmem<16x32xbf16>"]
    assert [str(v.type) for v in graph.outputs] == ["gmem<64x32xf16>"]
    assert graph.axis_sizes() == {"m": 4, "n": 2, "pair": 2, "wg": 3}


def test_scratch_given_as_a_dict_arrives_as_keyword_arguments():
    seen = {}

    def body(x, out, *, a_smem, bars):
        seen.update(a_smem=a_smem.type, bars=bars.type)

    tg.kernel(body, out_shape=spec(64, 64), scratch_shapes=dict(
        a_smem=tg.SMEM((2, 64, 64), F16), bars=tg.Barrier(num_barriers=2))).trace(spec(64, 64))
    assert str(seen["a_smem"]) == "smem<2x64x64xf16>" and seen["bars"].barrier.num_barriers == 2


def test_a_kernel_body_must_return_none():
    def body(x, out):  # @returns
        return 1

    with raises_at("returns", "a kernel body returns None"):
        tg.kernel(body, out_shape=spec(64, 64)).trace(spec(64, 64))


def test_primitives_outside_a_trace_say_where_they_were_called():
    with raises_at("outside", "can only be called while a kernel is being traced"):
        tg.wgmma_wait(0)  # @outside


def test_help_of_kernel_documents_the_launch_arguments():
    text = pydoc.render_doc(tg.kernel)
    for argument in ("out_shape", "grid", "grid_names", "cluster", "num_threads", "thread_name", "scratch_shapes",
                     "interpret=True"):
        assert argument in text


@pytest.mark.parametrize("value", [np.zeros((8, 16), np.float16), tg.ShapeDtype((8, 16), "f16")])
def test_shape_dtype_of_arrays_and_specs(value):
    assert tg.ShapeDtype.of(value) == tg.ShapeDtype((8, 16), F16)


def test_calling_a_kernel_with_specs_only_traces_it():
    kernel = tg.kernel(lambda x, out: None, out_shape=tg.ShapeDtype((8, 8), tg.float32))
    graph = kernel(tg.ShapeDtype((8, 8), tg.float16))
    assert isinstance(graph, tg.Graph) and graph is kernel.trace(tg.ShapeDtype((8, 8), tg.float16))
