"""scripts/sanitize_targets.py: what compute-sanitizer runs covers every design family tg.matmul chooses among,
and tg.matmul's fp8 calls against their float64 products."""
import os
import sys

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.testing import compare

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import sanitize_targets  # noqa: E402
from tilegemm.ops import blockscaling, designs  # noqa: E402


def test_the_sanitized_shapes_give_every_design_family_a_design():
    covered = {family for family in designs.FAMILIES for m, n, k in sanitize_targets.SHAPES
               if sanitize_targets.family_design(family, m, n, k, "float16", "h200", 132) is not None}
    assert covered == set(designs.FAMILIES)


def test_a_family_without_a_design_for_the_problem_is_skipped():
    assert sanitize_targets.family_design("swap-AB", 1000, 1016, 520, "float16", "h200", 132) is None


def test_the_sanitized_shapes_give_every_kind_of_tuning_candidate_a_design():
    covered = {kind for kind in sanitize_targets.TUNING_KINDS for m, n, k in sanitize_targets.SHAPES
               if sanitize_targets.tuning_design(*kind, m, n, k, "float16", "NVIDIA H200", 132) is not None}
    assert covered == set(sanitize_targets.TUNING_KINDS)


def test_a_tuning_candidate_is_the_pick_or_the_swapped_tile_in_clusters_of_the_size_asked():
    params = dict(sanitize_targets.tuning_design("pick", 4, 1000, 1016, 520, "float16", "NVIDIA H200", 132))
    assert params["cluster_m"] == 4 and params["num_sms"] == 120   # the 30 clusters of four the H200 holds
    assert {key: v for key, v in params.items() if key not in ("cluster_m", "num_sms")} == {
        key: v for key, v in designs.choose(1000, 1016, 520, "float16", "NVIDIA H200", 132) if key != "num_sms"}
    swapped = dict(sanitize_targets.tuning_design("swapped", 1, 1000, 1016, 520, "float16", "NVIDIA H200", 132))
    assert swapped["swap_ab"] and swapped["tile_m"] == 128 and swapped.get("cluster_m", 1) == 1


@pytest.mark.parametrize("scaling, promote, w_type", sanitize_targets.FP8_CALLS)
def test_the_fp8_targets_reference_is_the_product_tg_matmul_computes(scaling, promote, w_type, monkeypatch):
    matmul = tg.matmul
    monkeypatch.setattr(tg, "matmul", lambda *args, **kw: matmul(*args, interpret=True, **kw))
    # four K blocks, the last ragged
    c, ref = sanitize_targets.fp8_call(40, 136, 400, scaling, promote=promote, w_type=w_type)
    assert compare(c, ref, k=400, dtype=tg.bfloat16).ok    # the interpreter sums in f32
    assert sanitize_targets.fp8_check(c, ref, 400)[0]
    wrong = sanitize_targets.fp8_call(40, 136, 400, scaling, seed=6, w_type=w_type)[1]   # other scales: far off
    assert not sanitize_targets.fp8_check(c, wrong, 400)[0]
    c[7, 9] = np.nan                                                      # an element never written
    assert not sanitize_targets.fp8_check(c, ref, 400)[0]


def test_an_fp8_target_of_two_types_quantizes_w_to_its_own():
    _, w, *_ = sanitize_targets.fp8_operands(40, 136, 400, "row", w_type="e5m2")
    assert w.dtype == tg.float8_e5m2


def test_the_fp8_shapes_have_rows_tma_reads_and_ragged_k_blocks():
    assert all(k % 16 == 0 and k % blockscaling.BLOCK for _, _, k in sanitize_targets.FP8_SHAPES)


def test_the_padded_fp8_target_pads_scale_a_at_one_shape_and_scale_b_at_another():
    rows = [blockscaling.BlockScales("mk", "kn").unpadded_rows(*shape) for shape in sanitize_targets.FP8_SHAPES]
    assert any(a for a, _ in rows) and any(b for _, b in rows)


@pytest.mark.parametrize("epilogue", sanitize_targets.EPILOGUES)
def test_an_epilogue_targets_reference_is_what_tg_matmul_computes_through_the_epilogue(epilogue, monkeypatch):
    matmul = tg.matmul
    monkeypatch.setattr(tg, "matmul", lambda *args, **kw: matmul(*args, interpret=True, **kw))
    (run, reference), = [(run, reference) for name, run, reference in sanitize_targets.targets()
                         if name == f"tg.matmul epilogue ({epilogue})"]
    m, n, k = 40, 136, 72
    a, b = sanitize_targets.random_inputs(m, n, k, tg.float16, seed=5)
    c = run(a, b, m, n, k, tg.float16)
    assert compare(c, reference(a, b, m, n), k=k, dtype=tg.float16).ok
    assert not compare(c, sanitize_targets.product(a, b), k=k, dtype=tg.float16).ok   # the epilogue was applied
    wrong = sanitize_targets.epilogue_reference(epilogue, a, b, m, n, seed=6)   # other tensors: far off
    assert not compare(c, wrong, k=k, dtype=tg.float16).ok


def test_the_epilogue_targets_read_every_kind_of_tensor_but_a_single_value():
    kinds = {tuple(shape) for _, shapes, _ in sanitize_targets.EPILOGUES.values()
             for shape in shapes("M", "N").values()}
    assert kinds == {("N",), ("M", 1), ("M", "N")}   # per column, per row, whole (fp8's scales are [1, 1])
