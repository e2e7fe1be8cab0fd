"""Calling a tg.kernel: every argument a kernel cannot take is a tg.ArgumentError naming it, before anything runs;
a kernel built for one set of shapes refuses others; out= writes into the caller's arrays."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count


def scale_kernel(m=16, n=16):
    """out = 2 * x for an f32 [m, n] array: one SMEM round trip, small enough for every test."""
    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float32))
    def double(x, out):
        out[...] = x[...] * 2.0
    return double


X = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)


@pytest.mark.parametrize("bad,kind", [
    ([[1.0] * 16] * 16, "a list"), ((1.0, 2.0), "a tuple"), (None, "a NoneType"), (3, "an int"), (2.5, "a float"),
    ("x", "a str"), ({"x": 1}, "a dict"), (b"\0" * 64, "a bytes"),
])
@pytest.mark.parametrize("interpret", [True, False])
def test_anything_but_an_array_is_refused_naming_the_argument(bad, kind, interpret):
    with pytest.raises(tg.ArgumentError, match=rf"argument 0 \(x\) of kernel `double` is {kind}, not an array: "
                                               r"pass a numpy array or a device array"):
        scale_kernel()(bad, interpret=interpret)


def test_a_torch_size_is_not_an_array():
    torch = pytest.importorskip("torch")
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `double` is a Size, not an array"):
        scale_kernel()(torch.Size([16, 16]))


def test_a_torch_meta_tensor_has_no_data_to_run_on():
    torch = pytest.importorskip("torch")
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `double` is a torch meta tensor, "
                                               r"which has a shape but no data"):
        scale_kernel()(torch.empty(16, 16, device="meta"))


def test_the_interpreter_takes_host_tensors_and_refuses_gpu_ones():
    torch = pytest.importorskip("torch")
    assert np.array_equal(scale_kernel()(torch.from_numpy(X), interpret=True), 2 * X)

    class OnTheGpu:
        """An array that says, through DLPack, that it lives on cuda:0."""
        shape, dtype = (16, 16), np.dtype(np.float32)

        def __dlpack__(self, stream=None):
            raise AssertionError("the interpreter must not read GPU memory")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `double` lives on a GPU, but "
                                               r"interpret=True runs in the numpy interpreter"):
        scale_kernel()(OnTheGpu(), interpret=True)


@pytest.mark.parametrize("arrays", [(), (X, X)])
def test_the_number_of_arrays_must_match_the_inputs(arrays):
    with pytest.raises(tg.ArgumentError, match=rf"kernel `double` takes 1 input array\(s\) \(x\), got {len(arrays)}"):
        scale_kernel()(*arrays, interpret=True)


def test_an_unknown_keyword_is_refused_naming_the_call_options():
    with pytest.raises(tg.ArgumentError, match=r"kernel `double` got an unexpected keyword argument 'scale'; it "
                                               r"takes call options: interpret=, seed=, out=, debug="):
        scale_kernel()(X, interpret=True, scale=3)


def test_a_keyword_naming_a_ref_parameter_is_refused():
    with pytest.raises(tg.ArgumentError, match=r"unexpected keyword argument 'x'"):
        scale_kernel().trace(tg.ShapeDtype((16, 16), tg.float32), x=1)


def test_static_keywords_the_body_takes_are_listed():
    @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float32))
    def scaled(x, out, *, factor=2.0):
        out[...] = x[...] * factor
    assert np.array_equal(scaled(X, interpret=True, factor=3.0), 3 * X)
    with pytest.raises(tg.ArgumentError, match=r"it takes static keywords: factor; call options"):
        scaled(X, interpret=True, fator=3.0)


def test_specs_only_trace_and_cannot_be_run():
    kernel = scale_kernel()
    assert isinstance(kernel(tg.ShapeDtype((16, 16), tg.float32)), tg.Graph)
    with pytest.raises(tg.ArgumentError, match="only tg.ShapeDtype specs, which have no data"):
        kernel(tg.ShapeDtype((16, 16), tg.float32), interpret=True)


def test_a_seed_belongs_to_the_interpreter():
    with pytest.raises(tg.ArgumentError, match=r"seed= shuffles the numpy interpreter's schedule"):
        scale_kernel()(X, seed=3)


def test_debug_must_be_a_switch():
    with pytest.raises(tg.ArgumentError, match=r"debug= must be True, False, None or a tg.Debug, got str 'yes'"):
        scale_kernel()(X, debug="yes")


def test_an_unknown_element_type_is_refused():
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `double` has element type complex64"):
        scale_kernel()(X.astype(np.complex64), interpret=True)


def test_a_kernel_built_for_one_shape_refuses_another_instead_of_computing_part_of_it():
    kernel = scale_kernel()
    kernel(X, interpret=True)
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(x\) of kernel `double` is f32\[16, 32\] but the "
                                               r"kernel was built for f32\[16, 16\]"):
        kernel(np.zeros((16, 32), np.float32), interpret=True)


def test_a_kernel_whose_out_shape_follows_its_inputs_serves_every_shape():
    @tg.kernel(out_shape=lambda x: tg.ShapeDtype(x.shape, x.dtype))
    def double(x, out):
        out[...] = x[...] * 2.0
    for shape in ((16, 16), (8, 32)):
        x = np.ones(shape, np.float32)
        assert np.array_equal(double(x, interpret=True), 2 * x)


def test_out_writes_into_the_callers_array_and_returns_it():
    out = np.full((16, 16), np.nan, np.float32)
    assert scale_kernel()(X, interpret=True, out=out) is out
    assert np.array_equal(out, 2 * X)


@pytest.mark.parametrize("out,message", [
    (np.zeros((16, 8), np.float32), r"is f32\[16, 8\] but the output is f32\[16, 16\]"),
    (np.zeros((16, 16), np.float16), r"is f16\[16, 16\] but the output is f32\[16, 16\]"),
    ([0.0] * 256, "must be a writeable numpy array"),
])
def test_out_is_checked_like_an_input(out, message):
    with pytest.raises(tg.ArgumentError, match=message):
        scale_kernel()(X, interpret=True, out=out)


@pytest.mark.skipif(device_count() > 0, reason="needs a machine without a CUDA GPU")
def test_without_a_gpu_a_well_formed_call_says_to_interpret():
    with pytest.raises(tg.LaunchError, match="no CUDA GPU: pass interpret=True"):
        scale_kernel()(X)


def test_the_interpreter_reads_bfloat16_host_tensors():
    torch = pytest.importorskip("torch")
    x = torch.randn(16, 16).to(torch.bfloat16)

    @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float32))
    def widen(x, out):
        out[...] = x[...].astype(tg.float32)
    assert np.array_equal(widen(x, interpret=True), x.float().numpy())


def accumulate_top_half_kernel():
    """total[:8] += x[:8] for f32 [16, 16] arrays, total (input 1) updated in place as output 0: rows 8-15 are
    never written and keep what total held."""
    @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float32), input_output_aliases={1: 0})
    def accumulate(x, total, out):
        out.at[tg.ds(0, 8), :][...] = total.at[tg.ds(0, 8), :][...] + x.at[tg.ds(0, 8), :][...]
    return accumulate


def test_an_aliased_output_starts_with_its_inputs_contents():
    total = np.full((16, 16), 5.0, np.float32)
    out = accumulate_top_half_kernel()(X, total, interpret=True)
    assert np.array_equal(out[:8], X[:8] + 5.0) and np.array_equal(out[8:], total[8:])
    assert np.all(total == 5.0), "a host array aliased to an output comes back as a new array, its own unchanged"


def test_an_aliased_output_cannot_also_be_given_as_out():
    with pytest.raises(tg.ArgumentError, match=r"kernel `accumulate` writes output\(s\) \[0\] into the inputs they "
                                               r"alias \(input_output_aliases=\{1: 0\}\): pass None for them in out="):
        accumulate_top_half_kernel()(X, X, out=np.empty_like(X), interpret=True)


@pytest.mark.parametrize("aliases,message", [
    ({0: 1}, r"input_output_aliases \{0: 1\} of kernel `double`: it takes 1 input\(s\) and has 1 output\(s\)"),
    ({"x": 0}, r"input_output_aliases must be a dict of input index -> output index \(ints >= 0\), got \{'x': 0\}"),
])
def test_aliases_name_an_input_and_an_output_the_kernel_has(aliases, message):
    with pytest.raises(tg.KernelError, match=message):
        @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float32), input_output_aliases=aliases)
        def double(x, out):
            out[...] = x[...] * 2.0
        double(X, interpret=True)


def test_an_aliased_input_and_output_agree_in_shape_and_dtype():
    @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float16), input_output_aliases={0: 0})
    def double(x, out):
        out[...] = (x[...] * 2.0).astype(tg.float16)
    with pytest.raises(tg.KernelError, match=r"input_output_aliases \{0: 0\} of kernel `double`: input 0 is "
                                             r"f32\[16, 16\] but output 0 is f16\[16, 16\]"):
        double(X, interpret=True)


def double_and_triple_kernel():
    """(2 x, 3 x) for an f32 [16, 16] array: a kernel of two outputs."""
    @tg.kernel(out_shape=(tg.ShapeDtype((16, 16), tg.float32),) * 2)
    def double_and_triple(x, doubled, tripled):
        doubled[...] = x[...] * 2.0
        tripled[...] = x[...] * 3.0
    return double_and_triple


def test_out_may_leave_some_outputs_to_the_call():
    target = np.empty_like(X)
    doubled, tripled = double_and_triple_kernel()(X, out=(None, target), interpret=True)
    assert tripled is target and np.array_equal(target, 3 * X) and np.array_equal(doubled, 2 * X)
