"""Block scales TMA cannot copy as given are padded by a pass written in tilegemm, then staged (interpreter):
the pad kernel, the padded design's product against float64 for each reason a scale is padded, which designs pad,
and the model's charge for the pass."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.ops import blockscaling, designs, scale_padding

from .test_matmul_blockscaled import block_scaled_inputs, block_scaled_reference, relative_error, stored_scales

# (scale layouts, shape) for each reason TMA cannot copy a scale array's rows as stored
UNALIGNED = [(("km", "nk"), (130, 256, 1024)), (("mk", "nk"), (64, 256, 640)), (("mk", "kn"), (64, 600, 1024))]
UNALIGNED_IDS = ["scale_a-M-not-4", "Kb-not-4", "scale_b-Nb-not-4"]


@pytest.mark.parametrize("shape", [(3, 5, 8), (70, 130, 132), (1, 4, 4)], ids=["one-block", "ragged-rows", "whole"])
def test_the_pad_kernel_keeps_every_element_and_fills_the_rest_of_each_row_with_zeros(shape):
    rows, cols, padded = shape
    x = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    out = scale_padding.build_pad(rows, cols, padded)(x, interpret=True)
    assert out.shape == (rows, padded)
    assert np.array_equal(out[:, :cols], x) and not out[:, cols:].any()


def test_the_pad_kernel_refuses_to_drop_columns():
    with pytest.raises(ValueError, match="padded_cols=4 must hold the 5 columns"):
        scale_padding.build_pad(3, 5, 4)


@pytest.mark.parametrize("layouts,shape", UNALIGNED, ids=UNALIGNED_IDS)
def test_padded_scales_are_staged_and_give_the_float64_product(layouts, shape):
    m, n, k = shape
    scales = blockscaling.BlockScales(*layouts)
    assert scales.staged_slots(m, n, k, 128) is None and scales.with_padding().staged_slots(m, n, k, 128)
    params = dict(tile_m=128, tile_n=128, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk",
                  stages=4, num_sms=132, pad_scales=True)
    design = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())), block_scales=scales)
    assert isinstance(design, scale_padding.PaddedScales)
    padded = [pad is not None for pad in design.pads]
    assert padded == [rows is not None for rows in scales.unpadded_rows(m, n, k)] and any(padded)
    copies = sum(op.kind == "copy_gmem_to_smem" for op in design.gemm.trace(*design.gemm_specs).walk())
    assert copies == 4   # A, B and both scales each K step: staged

    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=6)
    scale_a, scale_b = stored_scales(sa, sb, layouts)
    as_stored = [x if layout in ("mk", "kn") else x.T for x, layout in zip((scale_a, scale_b), layouts)]
    c = design(a, w, *as_stored, interpret=True)
    assert relative_error(c.astype(np.float32), block_scaled_reference(a, w, sa, sb)) < 2 ** -8


def test_the_padded_scales_are_the_given_ones_with_rows_of_whole_tma_units():
    scales = blockscaling.BlockScales("km", "nk")
    m, n, k = 130, 256, 640    # scale_a [5, 130] (M-major), scale_b [2, 5]: both rows ragged
    assert scales.unpadded_rows(m, n, k) == ((5, 130, 132), (2, 5, 8))
    assert [s.shape for s in scales.with_padding().specs(m, n, k)] == [(5, 132), (2, 8)]
    assert blockscaling.BlockScales("km", "nk").unpadded_rows(128, 512, 512) == (None, None)


def test_tg_matmul_pads_where_the_model_predicts_the_pass_pays_for_itself():
    # M = 4095 tokens: scale_a [Kb, M] (torch's and DeepGEMM's layout) has rows of 4095 float32
    scales = blockscaling.BlockScales("km", "nk")
    big = dict(designs.choose_block_scaled(4095, 7168, 16384, "float8_e4m3fn", "h200", 132, scales))
    assert big.get("pad_scales")
    ranked = designs.block_scaled_predictions(4095, 7168, 16384, "float8_e4m3fn", "h200", 132, scales)
    best_read = min(b.predicted_s for p, b in ranked if not p.get("pad_scales"))
    assert ranked[0][1].predicted_s < best_read and ranked[0][1].prepass_s > 0
    aligned = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200", 132, scales)
    assert not any(p.get("pad_scales") for p, _ in aligned)   # nothing to pad: no padded designs


def test_the_model_picks_what_the_h200_measured_fastest_of_the_padded_and_gmem_designs():
    # benchmarks/RESULTS.md run 104: at 4095x7168x16384 the padded 128x128 design (1.32x reading from GMEM); at
    # 1003x1024x4096 128x64 tiles reading from GMEM (the pass costs more than it saves there)
    scales = blockscaling.BlockScales("km", "nk")
    big = dict(designs.choose_block_scaled(4095, 7168, 16384, "float8_e4m3fn", "h200", 132, scales))
    small = dict(designs.choose_block_scaled(1003, 1024, 4096, "float8_e4m3fn", "h200", 132, scales))
    assert (big["tile_n"], big.get("pad_scales", False)) == (128, True)
    assert (small["tile_n"], small.get("pad_scales", False)) == (64, False)


def test_a_promoted_k_step_takes_at_least_the_fitted_round_trip():
    # 128x64 tiles' WGMMAs take ~0.21 us a step; the promoting loop measured ~0.38 us (run 104)
    from tilegemm.model import get_device
    scales = blockscaling.BlockScales("km", "nk").with_padding()
    ranked = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200", 132, scales)
    narrow = next(b.gemm for p, b in ranked if (p["tile_m"], p["tile_n"]) == (128, 64))
    floor = 128 * get_device("h200").promoted_step_s   # 128 K steps
    assert floor <= narrow.tile_time_s < 1.01 * floor     # the K loop at the floor, plus the exposed epilogue
    assert "promoted step" in narrow.table()


def test_the_model_charges_each_padding_pass_its_bytes_and_a_launch():
    from tilegemm.model.designs import memory_pass_s, padding_s
    one = padding_s([(128, 4095, 4096)], "h200")
    assert one == pytest.approx(memory_pass_s(128 * (4095 + 4096) * 4, "h200"))
    assert padding_s([(128, 4095, 4096), (2, 5, 8)], "h200") > one + memory_pass_s(0, "h200") * 0.99


def test_tg_matmul_runs_a_padded_design_through_its_one_call():
    # the design tg.matmul builds is called with the arrays as given, as any design
    m, n, k = 130, 256, 1024
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=7)
    scale_a, scale_b = stored_scales(sa, sb, ("km", "nk"))
    params = dict(designs.choose_block_scaled(m, n, k, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales("km", "nk")))
    c = tg.matmul(a, w.T, scale_a=scale_a, scale_b=scale_b, out_dtype=np.float32, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6
    assert "pad_scales" not in params   # at this size the pass would cost more than the GMEM reads (the model)
