"""f32 register arrays rounded to bf16 two elements an instruction (cvt.rn.bf16x2.f32, tilegemm.lower.device's
to_bfloat16): one at a time, ptxas serialized a 64x224 tile's WGMMAs; the rounding is numpy's (to nearest even)."""
import ml_dtypes
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count

from . import kernels

ODD = (8, 8)   # a SIMT array of one element per thread: the odd one out is rounded in a pair with itself


def wgmma_to_bfloat16():
    """c [64, 64] bf16 = a [64, 64] @ b [64, 64] (f16 operands), the accumulator rounded to bf16 in registers."""
    return kernels.one_wgmma(64, out_dtype=tg.bfloat16)


def simt_to_bfloat16(shape=ODD):
    @tg.kernel(out_shape=tg.ShapeDtype(shape, tg.bfloat16))
    def rounded(x, y):
        y[...] = x[...].astype(tg.bfloat16)
    return rounded


def lowered(kernel, *specs):
    return kernel.lower(*specs, arch="sm_90a")


WGMMA_SPECS = (tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16))
SIMT_SPECS = (tg.ShapeDtype(ODD, tg.float32),)


@pytest.mark.parametrize("kernel,specs", [(wgmma_to_bfloat16, WGMMA_SPECS), (simt_to_bfloat16, SIMT_SPECS)],
                         ids=["accumulator", "odd-simt-array"])
def test_an_f32_array_rounds_to_bf16_in_pairs(kernel, specs):
    code = lowered(kernel(), *specs)
    assert "tgd.to_bfloat16(" in code.source
    ptx = code.compile().ptx
    assert "cvt.rn.bf16x2.f32" in ptx and "cvt.rn.bf16.f32" not in ptx


def test_f16_keeps_cute_dsls_own_conversion():
    @tg.kernel(out_shape=tg.ShapeDtype(ODD, tg.float16))
    def rounded(x, y):
        y[...] = x[...].astype(tg.float16)
    assert "tgd.to_bfloat16" not in lowered(rounded, *SIMT_SPECS).source


def numpy_bfloat16(x):
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_the_rounding_is_numpys_bit_for_bit_on_the_gpu():
    rng = np.random.default_rng(0)
    ties = np.float32([1 + 2 ** -8, 1 + 3 * 2 ** -8]).repeat(8) * np.float32([1, -1] * 8)   # to even: down, up
    x = np.concatenate([ties, rng.standard_normal(64 - ties.size, np.float32) * 1e3]).reshape(ODD)
    x[0, :3] = [np.inf, -np.inf, np.nan]
    y = np.asarray(simt_to_bfloat16()(x))
    nan = np.isnan(x)
    assert np.isnan(y.astype(np.float32))[nan].all()   # a NaN stays one (its payload is the hardware's, 0x7fff)
    np.testing.assert_array_equal(y.view(np.uint16)[~nan], numpy_bfloat16(x).view(np.uint16)[~nan])
    a = rng.standard_normal((64, 64), np.float32).astype(np.float16)
    b = rng.standard_normal((64, 64), np.float32).astype(np.float16)
    product = a.astype(np.float32) @ b.astype(np.float32)
    out = np.asarray(wgmma_to_bfloat16()(a, b)).astype(np.float32)
    np.testing.assert_allclose(out, numpy_bfloat16(product).astype(np.float32), rtol=2 ** -7, atol=1e-6)
