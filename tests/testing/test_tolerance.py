"""The tolerance rule: tight enough that an f16 accumulator fails it, loose enough for any correct f32 accumulation
(rounding to nearest, or truncating like tensor-core adders) followed by one rounding to the output dtype."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.testing import random_inputs, tolerance, unit_roundoff


def tiled_product(a, b, *, tile_k=64, acc_dtype=tg.float32):
    """a @ b as a tiled kernel computes it: each K tile's f32 product added into an `acc_dtype` accumulator."""
    acc = np.zeros((a.shape[0], b.shape[1]), acc_dtype)
    for k0 in range(0, a.shape[1], tile_k):
        part = a[:, k0:k0 + tile_k].astype(np.float32) @ b[k0:k0 + tile_k].astype(np.float32)
        acc = (acc.astype(np.float32) + part).astype(acc_dtype)
    return acc


def truncated_product(a, b):
    """a @ b accumulated in f32 one product at a time, every sum rounded toward zero (worse than tensor cores,
    whose adders truncate once per group of products)."""
    acc = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[1]):
        exact = acc + np.outer(a[:, i].astype(np.float64), b[i].astype(np.float64))
        acc = exact.astype(np.float32)
        over = np.abs(acc) > np.abs(exact)
        acc[over] = np.nextafter(acc[over], np.float32(0))
        acc = acc.astype(np.float64)
    return acc


def ratio(got, a, b, *, out_dtype, k, acc_dtype=tg.float32):
    """The largest |got - a@b| / tolerance over the elements."""
    expected = a.astype(np.float64) @ b.astype(np.float64)
    limit = tolerance(expected, k=k, dtype=out_dtype, acc_dtype=acc_dtype)
    return float((np.abs(got.astype(np.float64) - expected) / limit).max())


@pytest.mark.parametrize("dtype, mantissa_bits", [(tg.float16, 10), (tg.bfloat16, 7), (tg.float32, 23)])
def test_unit_roundoff_is_half_the_gap_after_one(dtype, mantissa_bits):
    u = unit_roundoff(dtype)
    one = np.ones((), dtype)
    assert u == 2.0 ** -(mantissa_bits + 1)
    assert one + np.asarray(2 * u, dtype) > one and one + np.asarray(u, dtype) == one


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m, n, k", [(128, 128, 8), (128, 128, 72), (64, 64, 1024), (16, 16, 8192)])
def test_a_correct_f32_accumulation_rounded_once_to_the_output_is_within_tolerance(dtype, m, n, k):
    a, b = random_inputs(m, n, k, dtype)
    assert ratio(tiled_product(a, b).astype(dtype), a, b, out_dtype=dtype, k=k) <= 1


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("m, n, k", [(128, 128, 8), (128, 128, 64), (64, 64, 1024)])
def test_up_to_k_1024_rounding_to_the_output_alone_comes_within_a_factor_two_of_the_tolerance(dtype, m, n, k):
    a, b = random_inputs(m, n, k, dtype)
    assert ratio(tiled_product(a, b).astype(dtype), a, b, out_dtype=dtype, k=k) > 0.5


@pytest.mark.parametrize("k", [64, 1024, 4096])
def test_an_f32_result_whose_every_sum_was_truncated_is_within_a_third_of_the_tolerance(k):
    a, b = random_inputs(16, 16, k, tg.float16)
    assert ratio(truncated_product(a, b), a, b, out_dtype=tg.float32, k=k) < 1 / 3


@pytest.mark.parametrize("m, n, k", [(64, 64, 128), (128, 128, 512), (64, 64, 4096)])
def test_an_f16_accumulator_is_beyond_tolerance_once_k_spans_two_tiles(m, n, k):
    a, b = random_inputs(m, n, k, tg.float16)
    got = tiled_product(a, b, acc_dtype=tg.float16)
    assert ratio(got, a, b, out_dtype=tg.float16, k=k) > 1.5
    assert ratio(got, a, b, out_dtype=tg.float16, k=k, acc_dtype=tg.float16) <= 1   # unless declared


def test_results_in_the_subnormal_range_of_f16_are_within_tolerance():
    expected = np.random.default_rng(0).standard_normal((64, 64)) * 1e-6   # f16 is subnormal below 6.1e-5
    limit = tolerance(expected, k=1, dtype=tg.float16)
    assert (np.abs(expected.astype(tg.float16).astype(np.float64) - expected) <= limit).all()
    assert (np.abs(expected.astype(tg.float16).astype(np.float64) - expected) > unit_roundoff(tg.float16) *
            np.abs(expected)).any()   # where the relative term alone would not do


def test_the_tolerance_is_finite_everywhere_and_only_the_finite_reference_values_set_its_scale():
    expected = np.array([[1.0, np.inf], [np.nan, -2.0]])
    limit = tolerance(expected, k=64, dtype=tg.float16)
    assert np.isfinite(limit).all() and limit[0, 1] == limit[1, 0] < limit[0, 0] < limit[1, 1]
