"""How GEMM inputs are stored (model/layouts.py): shapes, major-ness, the TMA boxes that fill a stage, and the L2
lines their rows read."""
import pytest

import tilegemm as tg
from tilegemm.lang.analysis import K_MAJOR, MN_MAJOR
from tilegemm.model import layouts


@pytest.mark.parametrize("a_layout,b_layout,a_shape,b_shape", [
    ("mk", "kn", (100, 30), (30, 70)), ("km", "nk", (30, 100), (70, 30)),
    ("mk", "nk", (100, 30), (70, 30)), ("km", "kn", (30, 100), (30, 70))])
def test_operand_specs_are_the_arrays_as_stored(a_layout, b_layout, a_shape, b_shape):
    a, b = layouts.operand_specs(100, 70, 30, tg.bfloat16, a_layout, b_layout)
    assert (a.shape, b.shape) == (a_shape, b_shape) and a.dtype == b.dtype == tg.bfloat16
    assert layouts.unstored(a_layout, a.shape) == (100, 30) and layouts.unstored(b_layout, b.shape) == (70, 30)
    assert a.shape[layouts.mn_dim(a_layout)] == 100 and b.shape[layouts.mn_dim(b_layout)] == 70


def test_k_last_is_k_major_for_both_operands():
    assert [layouts.layout_of("A", major) for major in (K_MAJOR, MN_MAJOR)] == ["mk", "km"]
    assert [layouts.layout_of("B", major) for major in (K_MAJOR, MN_MAJOR)] == ["nk", "kn"]
    assert [layouts.describe(w, lay) for w, lay in (("A", "km"), ("B", "nk"))] == ["A [K, M] M-major",
                                                                                 "B [N, K] K-major"]


@pytest.mark.parametrize("layout,mn,k,boxes", [("mk", 128, 64, 1), ("km", 128, 64, 2), ("kn", 192, 64, 3),
                                               ("nk", 192, 64, 1), ("kn", 32, 64, 1)])
def test_a_stage_takes_one_tma_box_per_128_bytes_of_its_contiguous_dimension(layout, mn, k, boxes):
    assert layouts.tma_boxes(layout, mn, k, itemsize=2) == boxes


@pytest.mark.parametrize("layout,mn,k,tile_mn,lines", [
    ("mk", 3072, 2048, 128, 1.0),      # 4096-byte rows: every 128-byte box row starts a line
    ("mk", 100, 1056, 128, 1.5),       # 2112-byte rows: every other row starts 64 bytes into a line
    ("mk", 3000, 2000, 128, 1.75),     # 4000-byte rows start 0, 32, 64 or 96 bytes in: three of four take two lines
    ("kn", 5000, 2000, 192, 1.875),    # 10000-byte rows: seven of eight start mid-line
    ("kn", 4096, 64, 16, 1.0),         # a 32-byte box row inside a line
    ("kn", 4104, 64, 16, 1.125),       # ... that crosses into the next one from one start in eight
])
def test_box_rows_that_start_mid_line_read_two_l2_lines(layout, mn, k, tile_mn, lines):
    assert layouts.line_factor(layout, mn, k, tile_mn, tile_k=64, itemsize=2) == lines


def test_unknown_layouts_are_refused():
    with pytest.raises(ValueError, match=r"a_layout must be one of \('mk', 'km'\)"):
        layouts.operand_specs(8, 8, 8, tg.float16, "nk", "kn")
