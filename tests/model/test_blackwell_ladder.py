"""The budget table of the seven Blackwell rungs on the B200 sheet, against the Pallas guide's measurements.

The guide (JAX Pallas, "Writing high-performance matrix multiplication kernels
for Blackwell") measured its rungs at 4096x8192x4096 in f16 on a B200, as
tensor-core utilisation: achieved FLOP/s over the datasheet peak. The model's
prediction is the same ratio (the compute floor over the predicted time). The
ranking is the test; the figures are printed (pytest -s) and recorded in
docs/blackwell.md, with why they differ.
"""
import functools
import os

import pytest

from tilegemm.model import budget
from tilegemm.showcase import load_example

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
SHAPE = (4096, 8192, 4096)
PUBLISHED = {                       # % tensor-core utilisation, as the guide measured each rung
    "blackwell_1_basic": 37.6,
    "blackwell_2_warp_specialized": 45.5,
    "blackwell_3_tiled_epilogue": 55.8,
    "blackwell_4_collective": 59.4,
    "blackwell_5_persistent": 61.5,
    "blackwell_6_epilogue_warpgroup": 63.4,
    "blackwell_7_grid_tiling": 69.4,
}
RUNGS = list(PUBLISHED)


@functools.lru_cache(maxsize=None)
def predicted(name):
    """The model's tensor-core utilisation (%) of the example `name` at SHAPE on the B200 sheet."""
    kernel = load_example(os.path.join(EXAMPLES, name + ".py")).build(*SHAPE)
    b = budget(kernel, SHAPE, device="b200")
    return 100 * b.compute_floor_s / b.predicted_s


def test_print_predicted_against_published():
    print(f"\n{'rung':34}{'predicted':>10}{'published':>10}")
    for name in RUNGS:
        print(f"{name:34}{predicted(name):9.1f}%{PUBLISHED[name]:9.1f}%")
    assert all(0 < predicted(name) <= 100 for name in RUNGS)


@pytest.mark.parametrize("slower, faster", list(zip(RUNGS[:5], RUNGS[1:6])), ids=lambda n: n.split("_", 2)[1])
def test_each_rung_up_to_the_epilogue_warpgroup_is_predicted_faster_than_the_last(slower, faster):
    assert predicted(slower) < predicted(faster)


@pytest.mark.xfail(strict=True, reason="the sheet's L2 (126 MiB) holds both operands at this shape and 6 stages "
                                       "hide a DRAM miss, so the tile order changes nothing in the model "
                                       "(docs/blackwell.md)")
def test_the_planar_snake_is_predicted_faster_than_row_order():
    assert predicted("blackwell_6_epilogue_warpgroup") < predicted("blackwell_7_grid_tiling")


def test_the_planar_snake_is_predicted_no_slower_than_row_order():
    assert predicted("blackwell_6_epilogue_warpgroup") <= predicted("blackwell_7_grid_tiling")


def test_the_table_in_docs_blackwell_md_is_current():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "blackwell.md")
    with open(path) as f:
        rows = [line.split("|")[1:-1] for line in f if line.startswith("| ") and line.rstrip().endswith("% |")]
    assert [(p.strip(), q.strip()) for _, p, q in rows] == [
        (f"{predicted(name):.1f}%", f"{PUBLISHED[name]:.1f}%") for name in RUNGS], \
        "docs/blackwell.md's table is stale: copy the one `pytest -s tests/model/test_blackwell_ladder.py` prints"
