"""tg.matmul(a, b, epilogue=fn, **tensors): fn traced on the flagship's accumulator tiles, against numpy."""
import collections
import math

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.ops import designs, dispatch, hopper_matmul
from tilegemm.lang.analysis import root_ref
from tilegemm.ops.epilogue import fused
from tilegemm.showcase import gpu_present, random_inputs

SQRT_HALF = 1 / math.sqrt(2)


def bias_gelu(acc, bias):
    x = acc + bias
    return 0.5 * x * (1.0 + tg.erf(x * SQRT_HALF))


def silu_scale_residual(acc, scale, residual):
    return acc * tg.sigmoid(acc) * scale + residual


def bias_gelu_tanh(acc, bias):
    x = acc + bias[None, :]
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def erf(x):
    return np.vectorize(math.erf)(x)


# name: (epilogue, tensors for an (m, n) result, numpy in float64 of (acc, **tensors))
CASES = {
    "bias_gelu": (bias_gelu, lambda rng, m, n: dict(bias=rng.standard_normal(n).astype(np.float32)),
                  lambda acc, bias: 0.5 * (acc + bias) * (1 + erf((acc + bias) * SQRT_HALF))),
    "bias_gelu_tanh_f16_bias": (
        bias_gelu_tanh, lambda rng, m, n: dict(bias=rng.standard_normal(n).astype(np.float16)),
        lambda acc, bias: 0.5 * (acc + bias) * (1 + np.tanh(0.7978845608028654 * ((acc + bias) + 0.044715 * (
            acc + bias) ** 3)))),
    "silu_row_scale_residual": (
        silu_scale_residual,
        lambda rng, m, n: dict(scale=rng.standard_normal((m, 1)).astype(np.float32),
                               residual=rng.standard_normal((m, n)).astype(np.float16)),
        lambda acc, scale, residual: acc / (1 + np.exp(-acc)) * scale + residual),
    "column_scale_1xn": (lambda acc, colscale: acc * colscale,
                         lambda rng, m, n: dict(colscale=rng.standard_normal((1, n)).astype(np.float32)),
                         lambda acc, colscale: acc * colscale),
    "one_value_1x1": (lambda acc, alpha: acc * alpha,
                      lambda rng, m, n: dict(alpha=rng.standard_normal((1, 1)).astype(np.float32)),
                      lambda acc, alpha: acc * alpha),
}


def case(name, shape, dtype=tg.float16):
    """Epilogue case `name` on a problem of `shape`: (a, b, its function, its tensors, the float64 result)."""
    m, n, k = shape
    a, b = random_inputs(m, n, k, dtype)
    epilogue, make, reference = CASES[name]
    tensors = make(np.random.default_rng(11), m, n)
    acc = a.astype(np.float64) @ b.astype(np.float64)
    return a, b, epilogue, tensors, reference(acc, **{k: v.astype(np.float64) for k, v in tensors.items()})


def run(name, shape, out_dtype=None, interpret=True, dtype=tg.float16):
    a, b, epilogue, tensors, ref = case(name, shape, dtype)
    return tg.matmul(a, b, epilogue=epilogue, out_dtype=out_dtype, interpret=interpret, **tensors), ref


def assert_matches(out, ref):
    assert out.shape == ref.shape
    assert np.isfinite(out.astype(np.float32)).all()
    assert np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref) < 1e-2


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("shape", [(256, 384, 128), (200, 136, 72)], ids=["256x384x128", "200x136x72"])
def test_fused_epilogues_match_numpy_in_the_interpreter(name, shape):
    out, ref = run(name, shape)
    assert out.dtype == np.float16
    assert_matches(out, ref)


@pytest.mark.parametrize("out_dtype", [tg.float32, tg.bfloat16])
def test_out_dtype_is_the_results_dtype(out_dtype):
    out, ref = run("bias_gelu", (200, 136, 72), out_dtype=out_dtype)
    assert out.dtype == out_dtype
    assert_matches(out, ref)


def test_out_dtype_alone_converts_the_plain_product():
    a, b = random_inputs(136, 200, 72, tg.bfloat16)
    out = tg.matmul(a, b, out_dtype=tg.float32, interpret=True)
    assert out.dtype == np.float32
    assert_matches(out, a.astype(np.float64) @ b.astype(np.float64))


def test_a_fused_call_at_decode_size_runs_a_design_that_can_fuse():
    """At M = 16 the plain call picks one-pass swap-AB (C^T's tiles), which cannot fuse an epilogue; a fused call
    picks a design storing C's own tiles or one split over K, whose reduction pass runs the epilogue."""
    plain = dict(dispatch.choose_config(16, 8192, 8192, "float16", "h200", 132))
    fused_choice = dict(dispatch.choose_config(16, 8192, 8192, "float16", "h200", 132, fused=True))
    assert plain.get("swap_ab") and plain.get("split_k", 1) == 1
    assert designs.fusable(fused_choice) and not designs.fusable(plain)
    out, ref = run("bias_gelu", (16, 136, 72))
    assert_matches(out, ref)


SPLIT_DESIGNS = {"64-row, split 2": dict(tile_m=64, tile_n=128, schedule="pingpong", epi_tile_n=64, split_k=2),
                 "swap-AB, split 3": dict(tile_m=64, tile_n=64, schedule="pingpong", epi_tile_n=64, swap_ab=True,
                                          split_k=3)}


def run_design(name, design, shape, interpret=True, out_dtype=None):
    """Epilogue case `name` through design `design` (build() parameters beyond the problem's) itself."""
    m, n, k = shape
    a, b, epilogue, tensors, ref = case(name, shape)
    spec = fused(epilogue, {key: tg.ShapeDtype(t.shape, t.dtype) for key, t in tensors.items()}, m, n, out_dtype,
                 tg.float16)
    params = dict({"stages": 4, **design}, num_sms=132, a_layout="mk", b_layout="kn")
    out = designs.build(m, n, k, "float16", tuple(sorted(params.items())), spec)(a, b, *tensors.values(),
                                                                                 interpret=interpret)
    return out, ref


SWAP_DESIGN = dict(tile_m=64, tile_n=16, schedule="pingpong", epi_tile_n=16, swap_ab=True)
ELEMENTWISE_OF_VECTORS = ["bias_gelu", "column_scale_1xn", "one_value_1x1"]


@pytest.mark.parametrize("out_dtype", [None, tg.float32])
@pytest.mark.parametrize("name", ELEMENTWISE_OF_VECTORS)
def test_a_one_pass_swap_ab_design_runs_an_elementwise_epilogue_on_c_transposed(name, out_dtype):
    out, ref = run_design(name, SWAP_DESIGN, (13, 200, 264), out_dtype=out_dtype)
    assert out.dtype == (out_dtype or np.float16)
    assert_matches(out, ref)


@pytest.mark.parametrize("out_dtype", [None, tg.float32])
def test_a_filling_design_runs_the_epilogue_on_its_narrower_last_store_slice(out_dtype):
    # swapped 256x152 tiles store 4 x 32 + 24 columns of C^T an accumulator: the bias of the last 24 rows of C
    # is read for that slice alone, and 300 rows of C end within the second tile's last slice
    design = dict(tile_m=256, tile_n=152, schedule="cooperative", epi_tile_n=32, swap_ab=True, stages=3)
    out, ref = run_design("bias_gelu", design, (300, 264, 136), out_dtype=out_dtype)
    assert_matches(out, ref)


def test_a_swap_ab_design_refuses_an_epilogue_that_is_not_elementwise():
    """A row reduction of C^T's tile would reduce C's columns: the trace says so, naming the function."""
    def row_softmax_denominator(acc, bias):
        return acc / (acc + bias).sum(axis=1, keepdims=True)

    spec = fused(row_softmax_denominator, {"bias": tg.ShapeDtype((200,), tg.float32)}, 13, 200, None, tg.float16)
    with pytest.raises(tg.KernelError, match=r"row_softmax_denominator' records 'reduce'.*swap-AB design runs an "
                                             r"epilogue on C\^T's tiles"):
        hopper_matmul.build(13, 200, 264, fused=spec, swap_ab=True, tile_m=64, tile_n=16, epi_tile_n=16).trace(
            tg.ShapeDtype((13, 264), tg.float16), tg.ShapeDtype((264, 200), tg.float16), *spec.specs)
    params = dict(dispatch.choose_config(13, 200, 264, "float16", "h200", 132, fused=spec))
    assert not (params.get("swap_ab") and params.get("split_k", 1) == 1)


@pytest.mark.parametrize("name,refusal", [("silu_row_scale_residual", r"not the \[M, N\] ones \(residual\)"),
                                          ("bias_gelu_tanh_f16_bias", r"records 'expand_dims'.*elementwise math")])
def test_epilogues_a_swap_ab_design_cannot_transpose_run_in_another_design(name, refusal):
    """An [M, N] residual is refused by the swap-AB builder, naming it; bias[None, :] (a 1-D tile indexed as one,
    an expand_dims) by its trace; tg.matmul picks a design storing C's tiles and computes the right product."""
    epilogue, make, _ = CASES[name]
    tensors = make(np.random.default_rng(11), 13, 200)
    spec = fused(epilogue, {key: tg.ShapeDtype(t.shape, t.dtype) for key, t in tensors.items()}, 13, 200, None,
                 tg.float16)
    with pytest.raises((ValueError, tg.KernelError), match=refusal):
        hopper_matmul.build(13, 200, 264, fused=spec, swap_ab=True, tile_m=64, tile_n=16, epi_tile_n=16).trace(
            tg.ShapeDtype((13, 264), tg.float16), tg.ShapeDtype((264, 200), tg.float16), *spec.specs)
    assert not dict(dispatch.choose_config(13, 200, 264, "float16", "h200", 132, fused=spec)).get("swap_ab")
    out, ref = run(name, (13, 200, 264))
    assert_matches(out, ref)


def test_a_fused_call_at_decode_size_runs_its_epilogue_in_a_one_pass_swap_ab_design():
    epilogue, make, _ = CASES["bias_gelu"]
    spec = fused(epilogue, {"bias": tg.ShapeDtype((8192,), tg.float32)}, 16, 8192, None, tg.float16)
    params = dict(dispatch.choose_config(16, 8192, 8192, "float16", "h200", 132, fused=spec))
    assert params.get("swap_ab") and params.get("split_k", 1) == 1


@pytest.mark.parametrize("design", list(SPLIT_DESIGNS))
@pytest.mark.parametrize("name", list(CASES))
def test_a_split_k_design_runs_the_epilogue_once_on_the_sum_of_its_slices(design, name):
    """fn(a @ b), not the sum of fn over the K slices: GELU and SiLU of a sum differ from sums of them."""
    out, ref = run_design(name, SPLIT_DESIGNS[design], (40, 200, 264))
    assert out.dtype == np.float16
    assert_matches(out, ref)


def test_a_split_k_designs_reduction_pass_takes_the_epilogue_tensors_and_stores_the_output_dtype():
    spec = fused(bias_gelu, {"bias": tg.ShapeDtype((384,), tg.float32)}, 40, 384, tg.bfloat16, tg.float16)
    params = dict(SPLIT_DESIGNS["64-row, split 2"], stages=4, num_sms=132, a_layout="mk", b_layout="kn")
    design = designs.build(40, 384, 512, "float16", tuple(sorted(params.items())), spec)
    assert design.gemm_inputs == 2   # a and b; the bias goes to the reduction pass
    reduce = design.reduce.trace(tg.ShapeDtype((128, 384), tg.float32), tg.ShapeDtype((384,), tg.float32))
    assert [(tuple(x.shape), x.dtype) for x in reduce.outputs] == [((40, 384), tg.bfloat16)]


def test_a_fused_epilogue_with_3d_operands_is_refused_with_the_fold():
    a = np.ones((2, 8, 16), np.float16)
    with pytest.raises(tg.ArgumentError, match=r"epilogue= and out_dtype= take 2-D a and b.*a.reshape\(-1, K\)"):
        tg.matmul(a, np.ones((16, 8), np.float16), epilogue=bias_gelu, bias=np.ones(8, np.float32), interpret=True)


def test_a_float32_output_keeps_the_smem_bytes_of_a_16_bit_one():
    spec = fused(bias_gelu, {"bias": tg.ShapeDtype((384,), tg.float32)}, 256, 384, tg.float32, tg.float16)
    kernel = hopper_matmul.build(256, 384, 128, fused=spec, tile_n=192, schedule="pingpong")
    graph = kernel.trace(tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 384), tg.float16),
                         tg.ShapeDtype((384,), tg.float32))
    (out_smem,) = [op.result for op in graph.walk() if op.kind == "alloc" and op.attrs.get("name") == "out_smem"]
    assert str(out_smem.type).startswith("smem<2x2x64x32xf32")


def test_each_column_slices_epilogue_tile_is_read_once_a_store_ahead_of_its_first_use():
    spec = fused(bias_gelu, {"bias": tg.ShapeDtype((384,), tg.float32)}, 256, 384, None, tg.float16)
    graph = hopper_matmul.build(256, 384, 128, fused=spec, tile_n=192, schedule="pingpong").trace(
        tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 384), tg.float16), tg.ShapeDtype((384,), tg.float32))
    order = [("read" if root_ref(op.operands[0]).name_hint == "bias" else None) if op.kind == "load" else
             "mma" if op.kind == "wgmma" else "store" if op.kind == "copy_smem_to_gmem" else None
             for op in graph.walk()]
    order = [step for step in order if step]
    # 2 accumulators x 3 column slices of 64, stored column slice by column slice: each slice's bias tile is read
    # once (not once per accumulator); the first slice's before the main loop's MMAs (one per accumulator), each
    # next one's before the store ahead of the first that uses it
    assert order == ["read", "mma", "mma", "store", "read", "store", "store", "read", "store", "store", "store"]


def test_a_scaled_tile_reads_each_scale_once_per_slice_shape_and_block_it_varies_along():
    # fp8 with row-wise scales in 128x160 ping-pong tiles: two 64-row accumulators, store slices 64, 64 and 32 wide
    m, n, k = 256, 320, 128
    scales = {"scale_a": tg.ShapeDtype((m, 1), tg.float32), "scale_b": tg.ShapeDtype((1, n), tg.float32),
              "scale": tg.ShapeDtype((1, 1), tg.float32)}
    spec = fused(lambda acc, scale_a, scale_b, scale: acc * scale_a * scale_b * scale, scales, m, n, None,
                 tg.bfloat16)
    kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, tile_n=160, epi_tile_n=64, schedule="pingpong",
                                 b_layout="nk", fused=spec, num_sms=2)
    graph = kernel.trace(tg.ShapeDtype((m, k), tg.float8_e4m3fn), tg.ShapeDtype((n, k), tg.float8_e4m3fn),
                         *scales.values())
    reads = collections.Counter(root_ref(op.operands[0]).name_hint for op in graph.walk() if op.kind == "load")
    # per column slice (not per accumulator); per accumulator and slice width; per slice width
    assert {name: reads[name] for name in scales} == {"scale_b": 3, "scale_a": 4, "scale": 2}
    rng = np.random.default_rng(0)
    a, w = (rng.standard_normal(shape).astype(tg.float8_e4m3fn) for shape in ((m, k), (n, k)))
    sa, sb = (rng.uniform(0.5, 2, shape).astype(np.float32) for shape in ((m, 1), (1, n)))
    s = np.full((1, 1), 0.25, np.float32)
    c = kernel(a, w, sa, sb, s, interpret=True)
    want = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb * s
    assert np.linalg.norm(c.astype(np.float64) - want) / np.linalg.norm(want) < 4e-3   # bf16 output


@pytest.mark.parametrize("last, swap", [(8, True), (8, False), (16, True), (24, True), (40, True), (56, True)],
                         ids=["8-swapped", "8-tiles-of-c", "16", "24", "40", "56"])
def test_an_epilogue_on_a_narrower_last_store_slice_compiles(last, swap):
    # CuTe partitions an 8-column tile without the unit mode of its column groups; the accumulator's slice must be
    # shaped so too, or combining it with the epilogue's tiles fails to compile (IR verification: a broadcast from a
    # higher rank), as swapped 128x200 fp8 tiles did in tg.tune_matmul (benchmarks/RESULTS.md run 194)
    m, n, k = 1000, 1032, 520
    spec = fused(lambda acc, scale: acc * scale, {"scale": tg.ShapeDtype((m, 1), tg.float32)}, m, n, None, tg.float16)
    params = dict(tile_m=128, tile_n=128 + last, schedule="cooperative", epi_tile_n=64, swap_ab=swap, stages=4,
                  num_sms=132, a_layout="mk", b_layout="kn")
    kernel = designs.build(m, n, k, "float16", tuple(sorted(params.items())), spec).kernel
    assert "wgmma.mma_async" in kernel.lower(*kernel.in_specs, arch="sm_90a").compile().ptx


def test_the_fused_kernel_lowers_the_epilogue_into_the_flagship_for_sm90a():
    spec = fused(bias_gelu, {"bias": tg.ShapeDtype((384,), tg.float32)}, 256, 384, None, tg.float16)
    lowered = hopper_matmul.build(256, 384, 128, fused=spec).lower(
        tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 384), tg.float16), tg.ShapeDtype((384,), tg.float32),
        arch="sm_90a")
    assert "cute.math.erf(" in lowered.source and "stride=(0, 1)" in lowered.source
    assert "wgmma.mma_async" in lowered.compile().ptx


@pytest.mark.parametrize("call, message", [
    (lambda a: tg.matmul(a, a, bias=a[0]), "unexpected keyword argument 'bias'"),
    (lambda a: tg.matmul(a, a, epilogue=3, interpret=True), "epilogue= must be a function fn(acc, **tiles), got int"),
    (lambda a: tg.matmul(a, a, epilogue=bias_gelu, bias=np.ones((7,), np.float32), interpret=True),
     "epilogue tensor bias has shape (7,); for an [M, N] = [8, 8] result"),
    (lambda a: tg.matmul(a, a, epilogue=bias_gelu, bias=np.ones((8,), np.int32), interpret=True),
     "epilogue tensor bias has element type i32"),
    (lambda a: tg.matmul(a, a, out_dtype=tg.int32, interpret=True),
     "out_dtype= must be float16, bfloat16 or float32, got "),
])
def test_malformed_epilogue_calls_are_argument_errors(call, message):
    a = np.ones((8, 8), np.float16)
    with pytest.raises(tg.ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]").replace("*", r"\*")):
        call(a)


def test_an_epilogue_returning_the_wrong_shape_names_its_definition():
    def row_sum(acc, bias):
        return bias

    a = np.ones((8, 8), np.float16)
    with pytest.raises(tg.KernelError, match=r"test_matmul_epilogue\.py:\d+: the epilogue function 'row_sum' must "
                                             r"return an array of the accumulator tile's shape \(64, 64\), got an "
                                             r"array of shape \(64,\)"):
        tg.matmul(a, a, epilogue=row_sum, bias=np.ones(8, np.float32), interpret=True)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name, shape", [(name, (1000, 1016, 520)) for name in CASES]
                         + [("bias_gelu", (2048, 2048, 2048)), ("bias_gelu", (16, 4096, 4096))],
                         ids=[f"{name}-1000x1016x520" for name in CASES] + ["bias_gelu-2048^3", "bias_gelu-16x4096^2"])
def test_fused_epilogues_match_numpy_on_the_gpu(name, shape):
    out, ref = run(name, shape, interpret=False)
    assert_matches(out, ref)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("design", list(SPLIT_DESIGNS))
@pytest.mark.parametrize("name", ["bias_gelu", "silu_row_scale_residual"])
def test_split_k_designs_run_the_epilogue_on_the_sum_on_the_gpu(design, name):
    out, ref = run_design(name, SPLIT_DESIGNS[design], (40, 1016, 2056), interpret=False)
    assert_matches(out, ref)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("out_dtype", [None, tg.float32])
@pytest.mark.parametrize("name", ELEMENTWISE_OF_VECTORS)
def test_a_one_pass_swap_ab_design_runs_the_epilogue_on_c_transposed_on_the_gpu(name, out_dtype):
    out, ref = run_design(name, SWAP_DESIGN, (13, 1016, 2056), interpret=False, out_dtype=out_dtype)
    assert_matches(out, ref)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("out_dtype", [tg.float32, tg.bfloat16])
def test_out_dtype_on_the_gpu(out_dtype):
    out, ref = run("bias_gelu", (1000, 1016, 520), out_dtype=out_dtype, interpret=False)
    assert out.dtype == out_dtype
    assert_matches(out, ref)
