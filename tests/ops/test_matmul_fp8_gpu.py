"""tg.matmul on fp8 on the H200: per-tensor and row-wise scaled e4m3/e5m2 products against the float64 product of the
same fp8 values, as accurate as torch._scaled_mm (cuBLAS) accumulating as the tensor core does (use_fast_accum=True:
these scalings do not promote partial sums), the prepared fast path, and decode-sized calls (split-K designs apply
the scales in their reduction pass, one-pass swap-AB designs to C^T's tiles).

The tensor core's fp8 accumulation keeps fewer mantissa bits than f32, so the bounds are those of that
accumulation at these K (about 1e-3 relative), not f32's; benchmarks/bench_fp8.py reports the errors beside
cuBLAS's default, promoting, path."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count

from .test_matmul_fp8 import DECODE_DESIGNS

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")

FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
SHAPES = [(200, 264, 320), (1024, 1536, 2048)]


def scaled_operands(m, n, k, dtype, kind, seed=0):
    """iid-normal a [M, K] and w [N, K] quantized to `dtype`, and (scale_a, scale_b) of `kind` ('tensor': 0-d,
    'row': [M, 1] and [1, N])."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(FP8[dtype])
    w = torch.randn(n, k, device="cuda", generator=g).to(FP8[dtype])
    if kind == "tensor":
        sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(3.0, device="cuda")
    else:
        sa = torch.rand(m, 1, device="cuda", generator=g) + 0.5
        sb = torch.rand(1, n, device="cuda", generator=g) + 0.5
    return a, w, sa, sb


def error_vs_float64(c, a, w, sa, sb):
    ref = (a.double() @ w.double().T) * sa.double() * sb.double()
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("kind", ["tensor", "row"])
@pytest.mark.parametrize("dtype", FP8)
def test_scaled_fp8_is_at_least_as_accurate_as_cublas(shape, kind, dtype):
    a, w, sa, sb = scaled_operands(*shape, dtype, kind)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    assert c.dtype == torch.bfloat16 and tuple(c.shape) == shape[:2] and not c.isnan().any()
    ours = error_vs_float64(c, a, w, sa, sb)
    assert ours < 1e-2   # bf16 output rounding (2^-9 relative at most) and the tensor core's fp8 accumulation
    # cuBLAS multiplies e5m2 only by e4m3, and only extents that are multiples of 16 (200x264x320 is ours alone)
    if dtype == "e4m3" and all(d % 16 == 0 for d in shape):
        theirs = error_vs_float64(torch._scaled_mm(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                   use_fast_accum=True), a, w, sa, sb)
        assert ours <= 1.25 * theirs, (ours, theirs)


def test_a_repeated_scaled_call_takes_the_prepared_path_and_reads_the_new_scales():
    a, w, sa, sb = scaled_operands(512, 768, 1024, "e4m3", "row")
    first = tg.matmul(a, w.T, scale_a=sa, scale_b=sb)
    sa.mul_(2.0)
    second = tg.matmul(a, w.T, scale_a=sa, scale_b=sb)
    torch.testing.assert_close(second.float(), 2 * first.float(), rtol=1e-2, atol=1e-2)
    assert error_vs_float64(second, a, w, sa, sb) < 1e-2


def test_f32_output_is_the_accumulator_unrounded():
    """Only the tensor core's fp8 accumulation (fewer mantissa bits than f32, without promotion) is left."""
    a, w, sa, sb = scaled_operands(256, 384, 4096, "e4m3", "tensor")
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and error_vs_float64(c, a, w, sa, sb) < 1e-2


DECODE = [(1, 4096, 7168), (16, 8192, 1024), (5, 1016, 4096)]


@pytest.mark.parametrize("shape", DECODE, ids=["x".join(map(str, s)) for s in DECODE])
@pytest.mark.parametrize("kind", ["tensor", "row"])
def test_decode_sized_scaled_calls_are_right(shape, kind):
    a, w, sa, sb = scaled_operands(*shape, "e4m3", kind)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, debug=True)   # output poisoned first
    assert not c.isnan().any() and error_vs_float64(c, a, w, sa, sb) < 1e-2


@pytest.mark.parametrize("design", list(DECODE_DESIGNS))
@pytest.mark.parametrize("kind", ["tensor", "row"])
def test_decode_designs_apply_the_scales_to_the_whole_sum(design, kind):
    from tilegemm.ops import designs, epilogue, scaling
    m, n, k = 16, 1016, 2048
    a, w, sa, sb = scaled_operands(m, n, k, "e4m3", kind)
    spec = epilogue.fused(scaling.scaled, scaling.specs((kind, kind), m, n), m, n, None, tg.bfloat16)
    params = dict(DECODE_DESIGNS[design], stages=4, num_sms=132, a_layout="mk", b_layout="nk")
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())), spec)
    c = run(a, w, *scaling.tensors((sa, sb), m, n, k).values(), debug=True)
    assert c.dtype == torch.bfloat16 and not c.isnan().any() and error_vs_float64(c, a, w, sa, sb) < 1e-2
