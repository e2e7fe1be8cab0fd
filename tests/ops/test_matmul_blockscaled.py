"""tg.matmul with block scales (1x128 for A, 128x128 for B) in the interpreter: the block-scaled product against
float64 on ragged and tiny shapes, both stored layouts of each scale, the output type, the design chosen, and
what it refuses."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang.dtypes import as_dtype
from tilegemm.model import budget, config_from_graph
from tilegemm.model.config import Promotion
from tilegemm.ops import blockscaling, designs, epilogue, hopper_matmul, scaling

FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types
SHAPES = [(200, 136, 304), (1, 64, 256), (130, 8, 16), (64, 264, 400)]   # ragged M, N and K; M = 1; K < 128


def block_scaled_inputs(m, n, k, dtype=tg.float8_e4m3fn, seed=0):
    """iid-normal a [M, K] and w [N, K] in `dtype`, scale_a [M, Kb] and scale_b [Kb, Nb] (row-major) spread over
    two orders of magnitude, so that a scale applied to the wrong block shows."""
    rng = np.random.default_rng(seed)
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    return (rng.standard_normal((m, k), dtype=np.float32).astype(dtype),
            rng.standard_normal((n, k), dtype=np.float32).astype(dtype),
            (10.0 ** rng.uniform(-1, 1, (m, kb))).astype(np.float32),
            (10.0 ** rng.uniform(-1, 1, (kb, nb))).astype(np.float32))


def block_scaled_reference(a, w, scale_a, scale_b):
    """The float64 block-scaled product: sum over K blocks kb of (a[:, kb] @ w[:, kb].T) * scale_a[:, kb] *
    scale_b[kb, column's block]."""
    m, n = a.shape[0], w.shape[0]
    a, w = a.astype(np.float64), w.astype(np.float64)
    c = np.zeros((m, n))
    for kb in range(scale_a.shape[1]):
        ks = slice(kb * blockscaling.BLOCK, (kb + 1) * blockscaling.BLOCK)
        column_scales = np.repeat(scale_b[kb].astype(np.float64), blockscaling.BLOCK)[:n]
        c += (a[:, ks] @ w[:, ks].T) * scale_a[:, kb:kb + 1] * column_scales
    return c


def relative_error(c, ref):
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


UNIT_DESIGNS = {"128-row": dict(tile_m=128, tile_n=128), "256-row, one shared partial": dict(tile_m=256, tile_n=64),
                "split over K": dict(tile_m=128, tile_n=64, split_k=2, split_reduction="last_slice"),
                "swapped": dict(tile_m=128, tile_n=16, epi_tile_n=16, swap_ab=True)}


@pytest.mark.parametrize("design", list(UNIT_DESIGNS))
def test_promotion_without_scales_is_the_block_scaled_kernel_with_every_scale_one(design):
    """blockscaling.UNIT: the kernel takes a and b alone and promotes every K block, to the bits of the same design
    reading scales of one."""
    m, n, k = (16, 264, 528) if UNIT_DESIGNS[design].get("swap_ab") else (200, 136, 1024 - 48)
    a, w, _, _ = block_scaled_inputs(m, n, k)
    params = dict(UNIT_DESIGNS[design], tile_k=blockscaling.BLOCK, schedule="cooperative", stages=4,
                  a_layout="mk", b_layout="nk")
    unit = hopper_matmul.build(m, n, k, dtype=tg.float8_e4m3fn, block_scales=blockscaling.UNIT, **params)
    ones = hopper_matmul.build(m, n, k, dtype=tg.float8_e4m3fn, block_scales=blockscaling.BlockScales("mk", "kn"),
                               **params)
    assert [spec.shape for spec in unit.in_specs][:2] == [(m, k), (n, k)]
    assert len(unit.in_specs) == len(ones.in_specs) - 2   # no scale_a, scale_b
    extra = [np.zeros(spec.shape, spec.dtype) for spec in unit.in_specs[2:]]   # a last slice's workspace, counters
    c = unit(a, w, *extra, interpret=True)
    c = c[0] if isinstance(c, tuple) else c
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    reference = ones(a, w, np.ones((m, kb), np.float32), np.ones((kb, nb), np.float32), *extra, interpret=True)
    reference = reference[0] if isinstance(reference, tuple) else reference
    assert np.array_equal(np.asarray(c).view(np.uint16), np.asarray(reference).view(np.uint16))
    assert relative_error(c, a.astype(np.float64) @ w.astype(np.float64).T) < 2.5e-3


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("name", FP8)
def test_the_block_scaled_product_matches_float64_to_the_output_rounding(shape, name):
    a, w, sa, sb = block_scaled_inputs(*shape, as_dtype(name))
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    ref = block_scaled_reference(a, w, sa, sb)
    assert c.dtype == tg.bfloat16 and c.shape == shape[:2]
    assert relative_error(c, ref) < 4e-3   # bf16 output: 2^-9 relative at most
    if shape[2] > blockscaling.BLOCK:      # one scale per K block, not one per row: a per-row scale is far off
        assert relative_error(c, block_scaled_reference(a, w, sa[:, :1].repeat(sa.shape[1], 1), sb)) > 0.1


@pytest.mark.parametrize("k_steps", [5, 6, 7])
def test_every_k_step_is_promoted_once_whether_the_steps_pair_up_or_one_is_left(k_steps):
    # step 0, then (a lone step 1 where the rest are odd) the loop's pairs; K ragged in its last block
    k = k_steps * blockscaling.BLOCK - 48
    a, w, sa, sb = block_scaled_inputs(72, 136, k, seed=k_steps)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=np.float32, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6


def test_a_float32_output_keeps_the_f32_promotion_exact_to_f32_rounding():
    a, w, sa, sb = block_scaled_inputs(200, 136, 304)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=np.float32, interpret=True)
    assert c.dtype == np.float32
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6


def test_scales_stored_as_torch_stores_them_read_the_same_product():
    a, w, sa, sb = block_scaled_inputs(200, 136, 304)
    torch_sa = np.ascontiguousarray(sa.T).T   # M-major: strides (1, M)
    torch_sb = np.ascontiguousarray(sb.T).T   # the transpose of a row-major [Nb, Kb]
    row_major = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    transposed = tg.matmul(a, w.T, scale_a=torch_sa, scale_b=torch_sb, interpret=True)
    np.testing.assert_array_equal(transposed, row_major)


def test_each_scale_layout_is_read_off_its_strides():
    a, w, sa, sb = block_scaled_inputs(64, 256, 512)
    for scale_a, scale_b, layouts in [(sa, sb, ("mk", "kn")), (np.asfortranarray(sa), np.asfortranarray(sb),
                                                                ("km", "nk"))]:
        stored = blockscaling.BlockScales(*layouts).specs(64, 256, 512)
        given = (scale_a if layouts[0] == "mk" else scale_a.T, scale_b if layouts[1] == "kn" else scale_b.T)
        assert [tuple(s.shape) for s in stored] == [x.shape for x in given]


LAYOUTS = [(a, b) for a in ("mk", "km") for b in ("kn", "nk")]


def stored_scales(sa, sb, layouts):
    """sa [M, Kb] and sb [Kb, Nb] as tg.matmul takes them stored in `layouts` (the "km"/"nk" ones transposed)."""
    return (sa if layouts[0] == "mk" else np.ascontiguousarray(sa.T).T,
            sb if layouts[1] == "kn" else np.ascontiguousarray(sb.T).T)


def scale_copies(m, n, k, layouts):
    """The TMA copies of one K step of the block-scaled kernel for this problem: 4 where its scales are staged
    (A, B and both scales), 2 where the consumers read the scales from GMEM."""
    scales = blockscaling.BlockScales(*layouts)
    params = dict(tile_m=128, tile_n=128, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk",
                  stages=4)
    kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, block_scales=scales, **params)
    graph = kernel.trace(tg.ShapeDtype((m, k), tg.float8_e4m3fn), tg.ShapeDtype((n, k), tg.float8_e4m3fn),
                         *scales.specs(m, n, k))
    return sum(op.kind == "copy_gmem_to_smem" for op in graph.walk())


@pytest.mark.parametrize("layouts", LAYOUTS, ids=["/".join(x) for x in LAYOUTS])
def test_scales_tma_can_copy_are_staged_beside_a_and_b_and_read_the_same_product(layouts):
    m, n, k = 64, 496, 1536 - 48   # M, ceil(K/128) and ceil(N/128) multiples of 4: every layout's rows 16 bytes
    assert blockscaling.BlockScales(*layouts).staged_slots(m, n, k, 128) is not None
    assert scale_copies(m, n, k, layouts) == 4
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=3)
    scale_a, scale_b = stored_scales(sa, sb, layouts)
    c = tg.matmul(a, w.T, scale_a=scale_a, scale_b=scale_b, out_dtype=np.float32, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6


@pytest.mark.parametrize("layouts,shape", [(("km", "nk"), (130, 256, 1024)), (("mk", "nk"), (64, 256, 640)),
                                           (("mk", "kn"), (64, 600, 1024))],
                         ids=["M-not-4", "Kb-not-4", "Nb-not-4"])
def test_scales_whose_rows_tma_cannot_copy_are_read_from_gmem(layouts, shape):
    assert blockscaling.BlockScales(*layouts).staged_slots(*shape, 128) is None
    assert scale_copies(*shape, layouts) == 2
    a, w, sa, sb = block_scaled_inputs(*shape, seed=4)
    scale_a, scale_b = stored_scales(sa, sb, layouts)
    c = tg.matmul(a, w.T, scale_a=scale_a, scale_b=scale_b, out_dtype=np.float32, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6


def test_a_stage_slot_of_staged_scales_is_whole_128_byte_units():
    for layouts in LAYOUTS:
        for slot in blockscaling.BlockScales(*layouts).staged_slots(512, 512, 512, 128):
            assert int(np.prod(slot)) * 4 % 128 == 0, (layouts, slot)


def test_block_scaled_calls_choose_a_promoting_cooperative_design_the_model_budgets():
    params = dict(designs.choose_block_scaled(4096, 7168, 16384, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales()))
    assert params["schedule"] == "cooperative" and params["tile_k"] == blockscaling.BLOCK
    assert blockscaling.BLOCK % params["tile_n"] == 0
    ranked = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales())
    budget = ranked[0][1].gemm
    assert budget.config.promotion and not budget.config.pingpong
    assert "promotion" in budget.table()


def test_the_model_reads_promotion_off_the_graph_and_only_there():
    m, n, k = 512, 512, 1024
    params = dict(tile_m=128, tile_n=128, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk")
    specs = [tg.ShapeDtype((m, k), tg.float8_e4m3fn), tg.ShapeDtype((n, k), tg.float8_e4m3fn)]
    scales = blockscaling.BlockScales()
    promoted = config_from_graph(hopper_matmul.build(m, n, k, tg.float8_e4m3fn, block_scales=scales, **params)
                                 .trace(*specs, *scales.specs(m, n, k)))
    plain = config_from_graph(hopper_matmul.build(m, n, k, tg.float8_e4m3fn, **params).trace(*specs))
    assert promoted.promotion and not plain.promotion
    assert promoted.acc_buffers == plain.acc_buffers == 1
    assert promoted.promotion == Promotion(partials=2, drain_steps=2)   # steps in pairs: hopper_matmul
    assert promoted.graph_resources.acc_registers == 3 * plain.graph_resources.acc_registers


def test_the_model_charges_consumers_that_read_their_scales_from_gmem():
    # M = 508 stages scale_a "km" (rows of 508 f32 are 16-byte units); M = 510 does not: read from GMEM
    n, k = 512, 1024
    params = dict(tile_m=128, tile_n=128, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk")
    scales = blockscaling.BlockScales()
    configs = {}
    for m in (508, 510):
        kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, block_scales=scales, **params)
        configs[m] = config_from_graph(kernel.trace(tg.ShapeDtype((m, k), tg.float8_e4m3fn),
                                                    tg.ShapeDtype((n, k), tg.float8_e4m3fn), *scales.specs(m, n, k)))
    assert configs[508].promotion == Promotion(partials=2, drain_steps=2, gmem_scales=False)
    assert configs[510].promotion == Promotion(partials=2, drain_steps=2, gmem_scales=True)
    staged, read = (budget(configs[m], (m, n, k), "h200") for m in (508, 510))
    assert "scales staged in SMEM" in staged.table() and "scales read from GMEM" in read.table()
    assert read.predicted_s > staged.predicted_s


SHARED_PARTIAL = [(("km", "nk"), (300, 200, 1008)), (("mk", "kn"), (512, 136, 1024 - 48)), (("km", "nk"), (130, 256, 1024))]


@pytest.mark.parametrize("layouts,shape", SHARED_PARTIAL, ids=["staged-ragged", "staged-ragged-k", "gmem-M-not-4"])
def test_256_row_tiles_promote_each_consumers_two_row_blocks_through_one_partial(layouts, shape):
    """A 256-row tile's consumer holds 128 rows: two promoted accumulators and one partial that each 64-row block's
    WGMMAs sum into in turn (staged scales, or read from GMEM where TMA cannot copy them), to f32 rounding."""
    m, n, k = shape
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=6)
    scales = blockscaling.BlockScales(*layouts)
    stored = [x if layout in ("mk", "kn") else x.T for x, layout in zip(stored_scales(sa, sb, layouts), layouts)]
    params = dict(tile_m=256, tile_n=128, epi_tile_n=32, tile_k=128, schedule="cooperative", a_layout="mk",
                  b_layout="nk", stages=4, num_sms=132)
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())),
                        epilogue.fused(None, {}, m, n, np.float32, tg.bfloat16), scales)
    assert relative_error(run(a, w, *stored, interpret=True), block_scaled_reference(a, w, sa, sb)) < 1e-6


@pytest.mark.parametrize("tile_m", [128, 256])
def test_tiles_in_clusters_along_n_share_a_and_promote_as_single_blocks_do(tile_m):
    """Two blocks of a cluster compute horizontally adjacent tiles of one A tile, multicast (DeepGEMM's 256 x 128
    tiles in pairs), each promoting its own columns by its own block of B's scales, to f32 rounding."""
    m, n, k = 300, 512, 1008
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=7)
    params = dict(tile_m=tile_m, tile_n=128, epi_tile_n=32, tile_k=128, schedule="cooperative", a_layout="mk",
                  b_layout="nk", stages=3, cluster_n=2, num_sms=4)
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())),
                        epilogue.fused(None, {}, m, n, np.float32, tg.bfloat16), blockscaling.BlockScales("mk", "kn"))
    assert relative_error(run(a, w, sa, sb, interpret=True), block_scaled_reference(a, w, sa, sb)) < 1e-6


def test_a_256_row_tiles_consumers_share_one_partial_and_the_model_reads_its_serial_promotion():
    m, n, k = 512, 512, 1024
    scales = blockscaling.BlockScales()
    params = dict(tile_m=256, tile_n=128, epi_tile_n=32, tile_k=128, schedule="cooperative", a_layout="mk",
                  b_layout="nk", stages=4)
    scratch = hopper_matmul.scratch_shapes(tg.float8_e4m3fn, tg.bfloat16, 256, 128, 128, 4, 32, "cooperative", "mk",
                                           "nk", False, promoted=True)
    assert sorted(name for name in scratch if name.startswith(("acc", "partial"))) == ["acc0", "acc1", "partial0_0"]
    kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, block_scales=scales, **params)
    config = config_from_graph(kernel.trace(*kernel.in_specs))
    assert config.promotion == Promotion(partials=1, drain_steps=1)   # every block waited for, then promoted
    assert config.graph_resources.acc_registers == 192
    assert "follows its drain" in budget(config, (m, n, k), "h200").table()


def test_block_scaled_designs_include_256_row_tiles_beside_narrower_store_slices_that_keep_four_stages():
    ranked = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales())
    wide = next(p for p, _ in ranked if p["tile_m"] == 256 and p["tile_n"] == 128)
    assert (wide["stages"], wide["epi_tile_n"]) == (4, 32)   # 64-column slices leave room for three
    square = next(p for p, _ in ranked if (p["tile_m"], p["tile_n"]) == (128, 128))
    assert square["stages"] == 5 and "epi_tile_n" not in square   # five stages are deep enough: 64-column slices
    assert hopper_matmul.deepest_stages(tg.float8_e4m3fn, **dict(
        {key: wide[key] for key in ("tile_m", "tile_n", "tile_k", "schedule", "a_layout", "b_layout")},
        epi_tile_n=64), promoted=True, scale_slots=blockscaling.BlockScales().staged_slots(4096, 7168, 16384, 256)) == 3
    decode = designs.block_scaled_predictions(64, 7168, 4096, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales())
    assert all(p["tile_m"] == 128 for p, _ in decode)   # a 256-row tile at decode's M would be mostly empty


def test_on_the_h100_tiles_staging_their_scales_keep_four_stages_as_measured_fastest_there():
    """RESULTS.md runs 199-200: 128x128 in four stages ran 1.05-1.19x as fast as in the five that fit."""
    on = {device: {(p["tile_m"], p["tile_n"]): p for p, _ in designs.block_scaled_predictions(
        4096, 7168, 16384, "float8_e4m3fn", device, 132, blockscaling.BlockScales())} for device in ("h100", "h200")}
    assert on["h100"][128, 128]["stages"] == 4 and on["h200"][128, 128]["stages"] == 5
    unit = designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h100", 132, blockscaling.UNIT)
    assert unit[0][0]["stages"] == 6   # no scales to stage: as deep as fits
    decode = designs.block_scaled_predictions(16, 8192, 8192, "float8_e4m3fn", "h100", 132, blockscaling.BlockScales())
    assert any(p["stages"] > 4 for p, _ in decode) and all(p.get("gmem_scales") for p, _ in decode)


def test_tuning_times_a_staged_design_at_every_ring_depth_from_four_to_the_deepest_that_fits():
    scales = blockscaling.BlockScales()
    square, wide = (next(p for p, _ in designs.block_scaled_predictions(4096, 7168, 16384, "float8_e4m3fn", "h200",
                                                                        132, scales) if p["tile_m"] == rows)
                    for rows in (128, 256))
    assert [p["stages"] for p in designs.staged_rings(4096, 7168, 16384, "float8_e4m3fn", square, scales)] == [4]
    assert designs.staged_rings(4096, 7168, 16384, "float8_e4m3fn", wide, scales) == []   # four is all that fits
    assert designs.staged_rings(4096, 7168, 16384, "float8_e4m3fn", square, blockscaling.UNIT) == []
    assert designs.staged_rings(4096, 7168, 16384, "float8_e4m3fn", dict(square, gmem_scales=True), scales) == []


@pytest.mark.parametrize("change,message", [
    (dict(schedule="pingpong"), "cooperative tiles of 128 or 256 rows"),
    (dict(tile_m=64, schedule="pingpong"), "cooperative tiles of 128 or 256 rows"),
    (dict(tile_m=256, swap_ab=True, tile_n=32, epi_tile_n=32), r"128 swapped.*got tile_m=256"),
    (dict(tile_n=192), "a tile_n dividing 128"),
    (dict(tile_k=64), "tile_k=128"),
    (dict(dtype=tg.bfloat16), "block scales take fp8 operands"),
    (dict(batch=2), r"computes one GEMM: build it without batch \(got batch=2\)"),
    (dict(split_k=3), "split_k=3 does not cut K=512's 4 scale blocks into equal slices"),
    (dict(tile_n=64, cluster_n=3), "cluster_n=3 with block scales needs whole clusters of the 4 N tiles"),
])
def test_the_builder_refuses_block_scaled_kernels_it_cannot_build(change, message):
    params = dict(dtype=tg.float8_e4m3fn, tile_n=128, tile_k=128, schedule="cooperative", a_layout="mk",
                  b_layout="nk")
    with pytest.raises(ValueError, match=message):
        hopper_matmul.build(256, 256, 512, block_scales=blockscaling.BlockScales(), **dict(params, **change))


@pytest.mark.parametrize("scales,message", [
    (lambda m, n, kb, nb: (np.ones((m, kb + 1), np.float32), np.ones((kb, nb), np.float32)),
     r"scale_a has shape \(64, 5\); .* block scales: scale_a \(64, 4\) .* scale_b \(4, 2\)"),
    (lambda m, n, kb, nb: (np.ones((m, kb), np.float32), np.ones((nb, kb), np.float32)),
     r"scale_b has shape \(2, 4\); .*scale_b \(4, 2\) \(one per 128 x 128 block of b\)"),
    (lambda m, n, kb, nb: (np.ones((m, kb), np.float32), np.ones((1, 1), np.float32)),
     r"scale_a is a block scale \(64, 4\) but the other scale is not: block scales come together"),
    (lambda m, n, kb, nb: (np.ones((m, kb), np.float16), np.ones((kb, nb), np.float32)), "scale_a is f16"),
    (lambda m, n, kb, nb: (np.ones((m, 2 * kb), np.float32)[:, ::2], np.ones((kb, nb), np.float32)),
     r"block scale scale_a has element strides \(8, 2\)"),
])
def test_malformed_block_scales_are_refused_with_the_legal_shapes(scales, message):
    a, w, _, _ = block_scaled_inputs(64, 256, 512)
    sa, sb = scales(64, 256, 4, 2)
    with pytest.raises(tg.ArgumentError, match=message):
        tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)


def test_16_bit_operands_refuse_block_scales():
    a = np.ones((64, 256), tg.bfloat16)
    with pytest.raises(tg.ArgumentError, match="block scales .* with fp8 operands only"):
        tg.matmul(a, a.T, scale_a=np.ones((64, 2), np.float32), scale_b=np.ones((2, 1), np.float32),
                  interpret=True)


def test_scales_that_are_row_wise_and_one_block_alike_read_the_same_product():
    a, w, sa, sb = block_scaled_inputs(64, 96, 128)   # K and N within one block: [M, 1] and [1, 1] are both kinds
    assert not scaling.block_scaled((sa, sb), 64, 96, 128)   # the epilogue runs them
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 4e-3


SPLIT_LAYOUTS = [(("km", "nk"), (1, 200, 1024 - 48)), (("mk", "nk"), (16, 256, 1024)), (("mk", "kn"), (64, 128, 1024))]


@pytest.mark.parametrize("split_k", [2, 4])
@pytest.mark.parametrize("layouts,shape", SPLIT_LAYOUTS, ids=["torch-M-1", "staged", "gmem-Nb"])
def test_a_split_design_promotes_each_slices_own_blocks_and_sums_the_slices(layouts, shape, split_k):
    """Slice s promotes K blocks s * B/S .. (s + 1) * B/S - 1 with their own scales (staged or read from GMEM); the
    reduction pass sums the slices' partials into c."""
    m, n, k = shape
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=split_k)
    scales = blockscaling.BlockScales(*layouts)
    params = dict(tile_m=128, tile_n=64, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk",
                  stages=4, num_sms=132, split_k=split_k)
    spec = epilogue.fused(None, {}, m, n, np.float32, tg.bfloat16)
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())), spec, scales)
    c = run(a, w, *(x if layout in ("mk", "kn") else x.T for x, layout in zip(stored_scales(sa, sb, layouts),
                                                                             layouts)), interpret=True)
    assert c.dtype == np.float32
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 1e-6


@pytest.mark.parametrize("layouts,shape", SPLIT_LAYOUTS, ids=["torch-M-1", "staged", "gmem-Nb"])
def test_the_last_slice_of_a_block_scaled_split_sums_the_promoted_partials_to_the_second_passs_bits(layouts, shape):
    m, n, k = shape
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=3)
    scales = blockscaling.BlockScales(*layouts)
    stored = [x if layout in ("mk", "kn") else x.T for x, layout in zip(stored_scales(sa, sb, layouts), layouts)]
    params = dict(tile_m=128, tile_n=64, tile_k=128, schedule="cooperative", a_layout="mk", b_layout="nk",
                  stages=4, num_sms=132, split_k=2)
    spec = epilogue.fused(None, {}, m, n, np.float32, tg.bfloat16)
    second, last = (designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(dict(params, **extra).items())), spec,
                                  scales)(a, w, *stored, interpret=True)
                    for extra in ({}, dict(split_reduction="last_slice")))
    assert isinstance(designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(dict(
        params, split_reduction="last_slice").items())), spec, scales), designs.LastSlice)
    assert np.array_equal(last, second) and relative_error(last, block_scaled_reference(a, w, sa, sb)) < 1e-6


SWAPPED = [((16, 264, 528), ("mk", "nk"), 16, 1), ((1, 256, 512), ("km", "nk"), 16, 2),
           ((40, 136, 400), ("mk", "kn"), 64, 1), ((20, 300, 1024 - 48), ("km", "kn"), 32, 4)]


@pytest.mark.parametrize("shape,layouts,tile_n,split_k", SWAPPED, ids=["16-rows", "one-row-split", "40-rows",
                                                                       "20-rows-split-ragged-k"])
def test_swapped_tiles_scale_their_rows_by_one_weight_block_and_their_columns_by_a(shape, layouts, tile_n, split_k):
    """C^T's tiles (decode's M): 128 rows of the weight, one of its scale blocks, and A's scales along the tile's
    columns, read from GMEM; ragged N and K, every scale layout, over the whole K or split and summed by the last
    slices."""
    m, n, k = shape
    a, w, sa, sb = block_scaled_inputs(m, n, k, seed=5)
    stored = [x if layout in ("mk", "kn") else x.T for x, layout in zip(stored_scales(sa, sb, layouts), layouts)]
    params = dict(tile_m=128, tile_n=tile_n, epi_tile_n=tile_n, tile_k=128, schedule="cooperative", swap_ab=True,
                  a_layout="mk", b_layout="nk", stages=4, num_sms=5,
                  **(dict(split_k=split_k, split_reduction="last_slice") if split_k > 1 else {}))
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())),
                        epilogue.fused(None, {}, m, n, np.float32, tg.bfloat16),
                        blockscaling.BlockScales(*layouts).read_from_gmem())
    assert relative_error(run(a, w, *stored, interpret=True), block_scaled_reference(a, w, sa, sb)) < 1e-6


def test_a_swapped_block_scaled_design_is_budgeted_in_the_mmas_frame():
    """C^T's tiles: 128 rows of the weight by 16 tokens, the problem (N, M, K) with K split in two, and 64 x 16
    store slices; the weight's 64 row tiles in two slices make 128 units."""
    ranked = designs.block_scaled_predictions(16, 8192, 8192, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales("km", "nk"))
    params, prediction = next((p, b) for p, b in ranked if p.get("swap_ab"))
    config = prediction.gemm.config
    assert prediction.swap_ab and params["split_k"] == 2 and prediction.gemm.shape == (8192, 16, 4096)
    assert (config.tile_m, config.tile_n, config.epilogue_tile) == (128, 16, (64, 16))
    assert prediction.gemm.tiles == 128


def test_up_to_32_rows_tg_matmul_runs_block_scales_on_swapped_tiles_and_from_33_rows_on_c_s_own():
    scales = blockscaling.BlockScales("km", "nk")
    for m in (1, 16, 32):
        params = dict(designs.choose_block_scaled(m, 8192, 8192, "float8_e4m3fn", "h200", 132, scales))
        assert params["swap_ab"] and params["tile_n"] == max(16, m) and params["gmem_scales"]
    for m in (33, 64, 128):
        ranked = designs.block_scaled_predictions(m, 8192, 8192, "float8_e4m3fn", "h200", 132, scales)
        assert not any(params.get("swap_ab") for params, _ in ranked)


@pytest.mark.parametrize("layouts", LAYOUTS, ids=["/".join(x) for x in LAYOUTS])
def test_at_decode_sizes_block_scaled_designs_read_the_scales_from_gmem_and_may_split_k(layouts):
    """Fewer rows than a tile: no design stages or pads the scales (a stage of the rings is worth more there), and
    K slices let every SM stream the weight; from a tile's rows on, neither."""
    scales = blockscaling.BlockScales(*layouts)
    decode = designs.block_scaled_predictions(16, 4096, 8192, "float8_e4m3fn", "h200", 132, scales)
    assert all(p.get("gmem_scales") and not p.get("pad_scales") for p, _ in decode)
    assert any(p.get("split_k", 1) > 1 for p, _ in decode)
    wide = designs.block_scaled_predictions(128, 4096, 8192, "float8_e4m3fn", "h200", 132, scales)
    assert not any(p.get("gmem_scales") or p.get("split_k", 1) > 1 for p, _ in wide)


def test_a_one_token_block_scaled_call_splits_k_to_stream_the_weight_through_every_sm():
    params = dict(designs.choose_block_scaled(1, 4096, 7168, "float8_e4m3fn", "h200", 132,
                                              blockscaling.BlockScales("km", "nk")))
    assert params.get("split_k", 1) > 1 and blockscaling.blocks(7168) % params["split_k"] == 0
    assert params.get("gmem_scales") and params.get("split_reduction") == "last_slice"
    kernel = designs.build(1, 4096, 7168, "float8_e4m3fn", tuple(sorted(params.items())),
                           epilogue.fused(None, {}, 1, 4096, None, tg.bfloat16), blockscaling.BlockScales("km", "nk"))
    assert isinstance(kernel, designs.LastSlice)   # one kernel: each tile's last slice sums the promoted partials
    graph = kernel.kernel.trace(*kernel.specs, *kernel.carried)
    assert sum(op.kind == "copy_gmem_to_smem" for op in graph.walk()) == 2   # A and B only
    a, w, sa, sb = block_scaled_inputs(1, 256, 1024, seed=9)
    c = tg.matmul(a, w.T, scale_a=np.ascontiguousarray(sa.T).T, scale_b=sb, interpret=True)
    assert relative_error(c, block_scaled_reference(a, w, sa, sb)) < 4e-3
