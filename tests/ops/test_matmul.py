"""tg.matmul: the flagship kernel behind a numpy-like call, configured per shape by the model."""
import functools

import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import designs, dispatch
from tilegemm.ops.designs import CLASSIC
from tilegemm.ops.dispatch import choose_config
from tilegemm.showcase import gpu_present, random_inputs


def matmul_builder(m, n, k, dtype):
    """tg.matmul as a tilegemm.testing builder: a kernel-like callable for every shape."""
    return lambda a, b, interpret=False, seed=None: tg.matmul(a, b, interpret=interpret)


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
@pytest.mark.parametrize("shape", [(256, 512, 128), (200, 312, 136), (8, 8, 8), (1, 8, 8), (3, 24, 40)])
def test_matmul_matches_numpy_in_the_interpreter(shape, dtype):
    tt.check(matmul_builder, lambda a, b: a @ b, shapes=[shape], dtypes=[dtype], modes=["interpret"], seeds=[None])


def choice(m, n, k):
    params = dict(choose_config(m, n, k, "float16", "h200", 132))
    assert params["num_sms"] == 132 and all(params[name] in values for name, values in CLASSIC.items())
    return params["tile_n"], params["schedule"]


@pytest.mark.parametrize("shape,tile_n,schedule", [
    # too few 128x256 tiles to fill 132 SMs: the narrowest tile; ping-pong's lone warpgroup issue costs more there
    # than its hidden epilogue saves (measured 3-4% slower, RESULTS.md run 11)
    ((2048, 2048, 2048), 128, "cooperative"),
    # the tail decides between 192 and 256: 8192^3 fills 99.3% of its last round with 128x192 tiles, 97.0% with
    # 128x256, and at 128x192 ping-pong hides the epilogue (measured fastest, runs 7-13) ...
    ((8192, 8192, 8192), 192, "pingpong"),
    ((8192, 28672, 4096), 192, "pingpong"),
    # ... while 8448 x 8192 makes exactly 16 rounds of 128x256 tiles, whose accumulators only fit cooperatively
    ((8448, 8192, 8192), 256, "cooperative"),
])
def test_the_configuration_is_the_models_choice_from_the_space(shape, tile_n, schedule):
    assert choice(*shape) == (tile_n, schedule)


@pytest.mark.parametrize("a_shape,b_shape,a_dtype,b_dtype,message", [
    ((64, 32), (16, 64), np.float16, np.float16, "needs a [M, K] and b [K, N]"),
    ((64, 32), (32, 64), np.float32, np.float32, "a and b both f16, both bf16 or each one of e4m3, e5m2; got f32"),
    ((64, 32), (32, 64), np.float16, tg.bfloat16, "takes arrays a and b both f16, .*; got f16 and bf16"),
    ((64, 36), (36, 64), np.float16, np.float16, "K=36 f16 is 72 bytes; pad K to a multiple of 8"),
    ((64, 32), (32, 60), np.float16, np.float16, "N=60 f16 is 120 bytes; pad N to a multiple of 8"),
    ((64, 0), (0, 64), np.float16, np.float16, "non-empty matrices; got M=64, N=64, K=0"),
    ((0, 32), (32, 64), np.float16, np.float16, "non-empty matrices; got M=0, N=64, K=32"),
])
def test_bad_arguments_are_refused_before_anything_runs(a_shape, b_shape, a_dtype, b_dtype, message):
    a, b = np.ones(a_shape, a_dtype), np.ones(b_shape, b_dtype)
    with pytest.raises(tg.LaunchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tg.matmul(a, b, interpret=True)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("shape", [(1000, 1016, 520), (2048, 2048, 2048)])
def test_matmul_on_the_gpu_matches_numpy(shape):
    a, b = random_inputs(*shape, tg.float16, seed=7)
    tt.assert_close(tg.matmul(a, b, debug=True), a.astype(np.float64) @ b.astype(np.float64), k=shape[2])


class UnknownElements:
    """A DLPack array of an element type numpy has no name for (torch's quantized int8)."""
    shape, dtype = (8, 8), "torch.qint8"

    def __dlpack__(self, stream=None):
        raise AssertionError("read before its element type was checked")


@pytest.mark.parametrize("call,message", [
    (lambda a: tg.matmul(a), "tg.matmul takes two arrays, a and b; got 1"),
    (lambda a: tg.matmul(), "tg.matmul takes two arrays, a and b; got 0"),
    (lambda a: tg.matmul(a, a, a), "tg.matmul takes two arrays, a and b; got 3"),
    (lambda a: tg.matmul(a, a, transpose=True), "unexpected keyword argument 'transpose'"),
    (lambda a: tg.matmul(a, [[1.0]]), "tg.matmul's argument b is a list, not an array"),
    (lambda a: tg.matmul(tg.ShapeDtype((8, 8), tg.float16), a), "a is a tg.ShapeDtype, which has no data"),
    (lambda a: tg.matmul(a, a, debug="loud"), "debug= must be True, False, None or a tg.Debug"),
    (lambda a: tg.matmul(a, UnknownElements()), "tg.matmul takes arrays a and b both f16, .*; b has element type "
                                               "qint8"),
])
def test_every_malformed_call_is_a_tg_argument_error(call, message):
    a = np.ones((8, 8), np.float16)
    with pytest.raises(tg.ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(a)


@pytest.mark.skipif(gpu_present(), reason="needs a machine without a CUDA GPU")
def test_without_a_gpu_tg_matmul_says_to_interpret():
    a = np.ones((64, 64), np.float16)
    with pytest.raises(tg.LaunchError, match=r"no CUDA GPU: pass interpret=True to run in the numpy interpreter"):
        tg.matmul(a, a)


@pytest.mark.parametrize("a_transposed", [False, True])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_transposed_views_of_row_major_arrays_are_read_as_stored(a_transposed, b_transposed):
    """x @ w.T for a weight stored [N, K] (and A given as the transpose of a [K, M] array) needs no copy."""
    m, n, k = 136, 200, 72
    a, b = random_inputs(m, n, k, tg.float16, seed=3)
    a_arg = np.ascontiguousarray(a.T).T if a_transposed else a
    b_arg = np.ascontiguousarray(b.T).T if b_transposed else b
    assert a_arg.flags.c_contiguous != a_transposed and b_arg.flags.c_contiguous != b_transposed
    c = tg.matmul(a_arg, b_arg, interpret=True)
    tt.assert_close(c, a.astype(np.float64) @ b.astype(np.float64), k=k)


def test_a_single_row_is_read_as_stored_whatever_its_stride_along_m():
    rows = random_inputs(3, 64, 72, tg.float16, seed=6)[0]
    a = rows[::2][:1]                        # row 0 of every other row: element strides (144, 1)
    b = random_inputs(1, 64, 72, tg.float16, seed=8)[1]
    assert a.strides[0] // a.itemsize == 144
    tt.assert_close(tg.matmul(a, b, interpret=True), a.astype(np.float64) @ b.astype(np.float64), k=72)


def test_any_other_strides_are_refused_naming_the_copy_that_makes_them_legal():
    a = np.ones((64, 64), np.float16)
    b = np.ones((64, 128), np.float16)[:, ::2]
    with pytest.raises(tg.ArgumentError, match=r"argument b has element strides \(128, 2\) for its shape \(64, 64\): "
                                               r"it takes b as a row-major \[K, N\] array, or the transpose of a "
                                               r"row-major \[N, K\] one \(such as w.T\); b.contiguous\(\)"):
        tg.matmul(a, b, interpret=True)


def test_a_transposed_a_needs_16_byte_rows_of_m():
    at = np.ones((64, 36), np.float16)       # stored [K, M] with M = 36: 72-byte rows
    with pytest.raises(tg.ArgumentError, match="M=36 f16 is 72 bytes; pad M to a multiple of 8"):
        tg.matmul(at.T, np.ones((64, 64), np.float16), interpret=True)


def test_batch_invariant_rows_have_the_same_bits_whatever_m():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((130, 2048)).astype(np.float16)
    w = rng.standard_normal((256, 2048)).astype(np.float16)
    full = tg.matmul(x, w.T, batch_invariant=True, interpret=True)
    for m in (1, 70):   # swap-AB and 64-row designs, each split over K as one row's design is
        rows = tg.matmul(np.ascontiguousarray(x[:m]), w.T, batch_invariant=True, interpret=True)
        assert np.array_equal(rows, full[:m])
    tt.assert_close(full, x.astype(np.float64) @ w.T.astype(np.float64), k=2048, dtype=tg.float16)


def test_a_call_is_batch_invariant_only_where_it_asks(monkeypatch):
    asked, choose = [], dispatch.Call.choose

    def choosing(call, batch_invariant=False):
        asked.append(batch_invariant)
        return choose(call, batch_invariant)

    monkeypatch.setattr(dispatch.Call, "choose", choosing)
    a, b = random_inputs(16, 64, 64, tg.float16, seed=1)
    tg.matmul(a, b, interpret=True)
    tg.matmul(a, b, batch_invariant=True, interpret=True)
    assert asked == [False, True]


@pytest.mark.parametrize("weight,split", [((1024, 14336), 5), ((2048, 14336), 2), ((4096, 14336), 1)])
def test_every_batch_invariant_call_against_a_weight_splits_k_as_one_row_does(weight, split):
    n, k = weight
    assert designs.invariant_split(n, k, "bfloat16", "h200", 132, "nk") == split
    for m in (1, 16, 64, 128, 300, 2048):   # swap-AB, 64-row, 128-row and 256-row designs
        params = dict(choose_config(m, n, k, "bfloat16", "h200", 132, "mk", "nk", split=split))
        assert params.get("split_k", 1) == split and params.get("stream_k", 1) == 1


def gpu(name, sm_count=132, compute_capability=(9, 0)):
    """A runtime Device as the driver describes a GPU (no GPU needed)."""
    from tilegemm.runtime.device import Device
    return Device(0, name, compute_capability, sm_count, 232448, 50 * 2**20)


def test_a_gpu_is_budgeted_with_the_clusters_its_driver_says_it_holds(monkeypatch):
    # each die's GPCs differ, so the driver's count for the GPU in use replaces the sheet's: a grid of 33 clusters
    # of four on 132 SMs ran its last clusters after the others, at half speed (RESULTS.md run 188)
    from tilegemm.model import get_device
    from tilegemm.ops import dispatch
    from tilegemm.runtime import occupancy
    monkeypatch.setattr(occupancy, "resident_clusters", lambda dev, sizes: ((2, 64), (4, 29)))
    monkeypatch.setattr(dispatch, "live_sheet", functools.cache(dispatch.live_sheet.__wrapped__))   # a fresh cache
    sheet = dispatch.live_sheet(gpu("NVIDIA H100 80GB HBM3"))
    assert str(sheet) == "NVIDIA H100 80GB HBM3" and sheet.resident_clusters == ((2, 64), (4, 29))
    assert sheet.measured_tensor_flops == get_device("h100").measured_tensor_flops
    clustered = [params for params, _ in designs.predictions(3000, 5000, 2000, "float16", sheet, 132)
                 if designs.cluster_size(params) > 1]
    assert {designs.cluster_size(params) for params in clustered} == {2, 4}
    assert all(params["num_sms"] == {2: 2 * 64, 4: 4 * 29}[designs.cluster_size(params)] for params in clustered)


def test_a_gpu_the_model_has_no_sheet_for_is_budgeted_as_its_architectures_reference_part(monkeypatch):
    from tilegemm.model import get_device
    from tilegemm.ops import dispatch
    from tilegemm.runtime import occupancy
    monkeypatch.setattr(occupancy, "resident_clusters", lambda dev, sizes: ())
    monkeypatch.setattr(dispatch, "live_sheet", functools.cache(dispatch.live_sheet.__wrapped__))
    hopper = dispatch.live_sheet(gpu("NVIDIA GH100 engineering sample", sm_count=114))
    blackwell = dispatch.live_sheet(gpu("NVIDIA B300 engineering sample", 160, (10, 0)))
    assert hopper.tensor_flops == get_device("h100").tensor_flops and blackwell.arch == "sm_100a"
    assert hopper.resident_clusters == get_device("h100").resident_clusters   # the driver answered nothing


def test_kernel_for_is_the_one_kernel_over_the_whole_k_tg_matmul_would_run():
    # at 64 x 4096 x 14336 tg.matmul splits K in two, summed by the last slices (tests/ops/test_designs.py); a caller
    # compiling one kernel gets the best design that takes only a and b
    kernel = dispatch.kernel_for(64, 4096, 14336, "float16", interpret=True, b_layout="nk")
    assert isinstance(kernel, tg.Kernel) and len(kernel.in_specs) == 2
    a, b = random_inputs(200, 264, 136, tg.float16, seed=4)
    c = dispatch.kernel_for(200, 264, 136, "float16", interpret=True)(a, b, interpret=True)
    tt.assert_close(c, a.astype(np.float64) @ b.astype(np.float64), k=136)


def test_a_prepared_launch_is_kept_per_signature_timeout_epilogue_and_batch_invariance():
    a = np.ones((8, 8), np.float16)
    plain = dispatch.prepared_key((a, a), 2.0)
    assert plain == dispatch.prepared_key((a, a), 2.0) != dispatch.prepared_key((a, a), 3.0)
    assert dispatch.prepared_key((a, a), 2.0, fused_key=("fn",)) == plain + (("fn",),)
    assert dispatch.prepared_key((a, a), 2.0, batch_invariant=True) == plain + ("batch-invariant",)


def test_forgetting_prepared_launches_makes_every_problem_choose_its_design_again(monkeypatch):
    def launch(arrays, outs, poison):   # a prepared launch, as a device call keeps one
        return [None]

    monkeypatch.setattr(dispatch, "_prepared", {dispatch.prepared_key((np.ones(1),), None): launch})
    dispatch.forget_prepared()
    assert dispatch._prepared == {}
