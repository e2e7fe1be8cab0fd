"""tg.matmul on fp8 on the H200: per-tensor and row-wise scaled e4m3/e5m2 products (and e4m3 by e5m2, either way
round) against the float64 product of the same fp8 values, as accurate as torch._scaled_mm (cuBLAS) accumulating as
the tensor core does (use_fast_accum=True: these scalings do not promote partial sums) and, with promote=True, as its
default path, which promotes; the prepared fast path, decode-sized calls (split-K designs apply the scales in their
reduction pass, one-pass swap-AB designs to C^T's tiles), and batch-invariant block-scaled and promoted calls.

The tensor core's fp8 accumulation keeps fewer mantissa bits than f32, so the bounds are those of that
accumulation at these K (about 1e-3 relative), not f32's; benchmarks/bench_fp8.py reports the errors beside
cuBLAS's default, promoting, path."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count

from .test_matmul_blockscaled_gpu import BLOCK_SUM_ERROR, block_scaled_operands
from .test_matmul_fp8 import DECODE_DESIGNS

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")
from tilegemm.lang.dtypes import as_dtype  # noqa: E402
from tilegemm.torch.host import torch_dtype  # noqa: E402

FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types
SHAPES = [(200, 264, 320), (1024, 1536, 2048)]
DECODE_SHAPES = [(1, 4096, 7168), (16, 8192, 1024), (5, 1016, 4096)]


def scaled_operands(m, n, k, dtype, kind, seed=0, w_dtype=None):
    """iid-normal a [M, K] and w [N, K] quantized to `dtype` (w to `w_dtype` where given), and (scale_a, scale_b)
    of `kind` ('tensor': 0-d, 'row': [M, 1] and [1, N])."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch_dtype(as_dtype(dtype)))
    w = torch.randn(n, k, device="cuda", generator=g).to(torch_dtype(as_dtype(w_dtype or dtype)))
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


MIXED = [("e4m3", "e5m2"), ("e5m2", "e4m3")]   # (a's type, w's): fp8 training's gradients by weights


@pytest.mark.parametrize("shape", SHAPES + DECODE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("kind", ["tensor", "row"])
@pytest.mark.parametrize("a_name, w_name", MIXED, ids=[f"{a}-{w}" for a, w in MIXED])
def test_mixed_fp8_is_at_least_as_accurate_as_cublas(shape, kind, a_name, w_name):
    a, w, sa, sb = scaled_operands(*shape, a_name, kind, w_dtype=w_name)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, debug=True)   # output poisoned first
    assert c.dtype == torch.bfloat16 and not c.isnan().any()
    ours = error_vs_float64(c, a, w, sa, sb)
    assert ours < 1e-2
    if all(d % 16 == 0 for d in shape):   # cuBLAS's extents
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


@pytest.mark.parametrize("shape", DECODE_SHAPES, ids=["x".join(map(str, s)) for s in DECODE_SHAPES])
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


PROMOTED = [(1024, 1536, 8192), (256, 512, 16384), (16, 1024, 4096), (1, 4096, 7168), (200, 264, 320)]


@pytest.mark.parametrize("shape", PROMOTED, ids=["x".join(map(str, s)) for s in PROMOTED])
@pytest.mark.parametrize("kind", ["tensor", "row"])
def test_promoted_scaled_fp8_is_as_accurate_as_cublass_default_path(shape, kind):
    m, n, k = shape
    a, w, sa, sb = scaled_operands(m, n, k, "e4m3", kind)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, promote=True, out=c)
    ours = error_vs_float64(c, a, w, sa, sb)
    fast = error_vs_float64(tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16), a, w, sa, sb)
    assert not c.isnan().any() and ours < 2.5e-3   # the bf16 output's rounding
    if k >= 4096:   # there the tensor core's own fp8 sums lose bits that promotion keeps
        assert ours < fast, (ours, fast)
    if all(d % 16 == 0 for d in shape):   # cuBLAS's extents
        theirs = error_vs_float64(torch._scaled_mm(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                   use_fast_accum=False), a, w, sa, sb)
        assert ours <= 1.02 * theirs, (ours, theirs)


def test_a_promoted_f32_output_keeps_each_k_blocks_sum():
    m, n, k = 256, 512, 16384
    a, w, sa, sb = scaled_operands(m, n, k, "e4m3", "tensor")
    promoted = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32, promote=True)
    unpromoted = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32)
    assert error_vs_float64(promoted, a, w, sa, sb) < BLOCK_SUM_ERROR < error_vs_float64(unpromoted, a, w, sa, sb)


@pytest.mark.parametrize("promoted", ["block scales", "promote=True"])
def test_batch_invariant_block_scaled_and_promoted_rows_have_the_same_bits_whatever_m(promoted):
    """Swapped tiles at a few tokens, C's own from 33 rows: each sums K in one pass, to the same bits."""
    m, n, k = 256, 2048, 2048
    a, w, sa, sb = block_scaled_operands(m, n, k, "e4m3")

    def call(rows):
        first = sa[:rows].t().contiguous().t()   # M-major, as torch stores it
        scales = dict(scale_a=first, scale_b=sb) if promoted == "block scales" else dict(promote=True)
        return tg.matmul(a[:rows], w.T, out_dtype=torch.float32, batch_invariant=True, **scales)
    full = call(m)
    for rows in (1, 16, 64):
        assert torch.equal(call(rows), full[:rows]), rows
