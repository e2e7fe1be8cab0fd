"""scripts/sanitize_targets.py: what compute-sanitizer runs covers every design family tg.matmul chooses among."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import sanitize_targets  # noqa: E402
from tilegemm.ops import designs  # noqa: E402


def test_the_sanitized_shapes_give_every_design_family_a_design():
    covered = {family for family in designs.FAMILIES for m, n, k in sanitize_targets.SHAPES
               if sanitize_targets.family_design(family, m, n, k, "float16", "h200", 132) is not None}
    assert covered == set(designs.FAMILIES)


def test_a_family_without_a_design_for_the_problem_is_skipped():
    assert sanitize_targets.family_design("swap-AB", 1000, 1016, 520, "float16", "h200", 132) is None
