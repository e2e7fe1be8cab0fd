"""assert_close and compare: every element under the tolerance rule, unwritten (NaN) elements counted apart, and a
failure located by its worst element, its worst tile and the relative Frobenius error."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.testing import assert_close, compare, random_inputs

M, N, K = 512, 512, 128


@pytest.fixture
def product():
    """(the f16 result of a correct kernel, its float64 reference)."""
    a, b = random_inputs(M, N, K, tg.float16)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(tg.float16), expected


def test_a_correct_result_passes_and_returns_its_figures(product):
    got, expected = product
    comparison = assert_close(got, expected, k=K)
    assert comparison.ok and comparison.unwritten == 0 and comparison.beyond == 0
    assert comparison.worst.error <= comparison.worst.tolerance and comparison.frobenius < 1e-3


def test_unwritten_elements_fail_though_the_frobenius_error_hides_them(product):
    got, expected = product
    got[130, 70:72] = np.nan                                           # 2 elements a kernel never wrote
    with pytest.raises(AssertionError, match=r"2 of 262144 elements are NaN .* within \[130:131, 70:72\]"):
        assert_close(got, expected, k=K)
    assert compare(got, expected, k=K).frobenius < 1e-2


def test_zeroed_elements_fail_at_their_worst_element_and_tile(product):
    got, expected = product
    got[64:72, 128:136] = 0                                            # an 8x8 corner of a tile left at zero
    comparison = compare(got, expected, k=K)
    worst = comparison.worst
    assert not comparison.ok and comparison.frobenius < 1e-1 and comparison.beyond > 32
    assert 64 <= worst.index[0] < 72 and 128 <= worst.index[1] < 136 and worst.got == 0
    assert worst.expected == expected[worst.index] and worst.error > worst.tolerance
    assert comparison.worst_tile == ((64, 128), (128, 192)) and comparison.tile_error > 1
    with pytest.raises(AssertionError) as info:
        assert_close(got, expected, k=K)
    for figure in (f"worst element {list(worst.index)}: got 0, expected {worst.expected:.6g}",
                   "worst 64x64 tile [64:128, 128:192]", "relative Frobenius error", "K = 128"):
        assert figure in str(info.value)


def test_tiles_are_as_large_as_asked(product):
    got, expected = product
    got[200, 10] += 1
    assert compare(got, expected, k=K, tile=(128, 32)).worst_tile == ((128, 256), (0, 32))


def test_dtype_names_what_the_result_was_rounded_to(product):
    got, expected = product
    widened = got.astype(np.float32)
    assert_close(widened, expected, k=K, dtype=tg.float16)
    with pytest.raises(AssertionError, match=r"u_out = 5.96e-08 \(f32\)"):
        assert_close(widened, expected, k=K)


def test_results_of_another_shape_fail(product):
    got, expected = product
    with pytest.raises(AssertionError, match=r"shape \(512, 511\), its reference \(512, 512\)"):
        assert_close(got[:, :-1], expected, k=K)


def test_nan_and_infinities_where_the_reference_has_them_agree_and_nowhere_else():
    expected = np.array([[1.0, np.inf], [np.nan, -np.inf]])
    assert assert_close(expected.astype(tg.float16), expected, k=1).ok
    with pytest.raises(AssertionError, match="1 of 4 elements beyond tolerance"):
        assert_close(np.array([[1.0, np.inf], [0.0, -np.inf]], tg.float16), expected, k=1)
