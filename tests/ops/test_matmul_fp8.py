"""tg.matmul on fp8 (e4m3, e5m2, and one by the other) in the interpreter: K-major operands, per-tensor and per-row
scales applied to the f32 accumulator as torch._scaled_mm applies them, with or without promotion every K block, the
output type, and what it refuses."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang.dtypes import as_dtype
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import blockscaling, designs, dispatch, epilogue, hopper_matmul, scaling
from tilegemm.ops.designs import CLASSIC
from tilegemm.ops.dispatch import choose_config

FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types
SHAPE = (200, 264, 320)   # ragged: partial row, column and K tiles


def fp8_operands(m, n, k, dtype, seed=0):
    """iid-normal a [M, K] and a weight w [N, K] in `dtype`; the product is a @ w.T."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=np.float32).astype(dtype),
            rng.standard_normal((n, k), dtype=np.float32).astype(dtype))


def scales_of(kind, m, n, seed=1):
    """(scale_a, scale_b) of a kind: 'tensor' (0-d and [1]), 'row' ([M, 1] and [1, N]) or 'mixed'."""
    rng = np.random.default_rng(seed)
    per_tensor = (np.array(0.5, np.float32), np.array([3.0], np.float32))
    per_row = (rng.uniform(0.5, 2, (m, 1)).astype(np.float32), rng.uniform(0.5, 2, (1, n)).astype(np.float32))
    return {"tensor": per_tensor, "row": per_row, "mixed": (per_row[0], per_tensor[1])}[kind]


def relative_error(c, ref):
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("name", FP8)
@pytest.mark.parametrize("kind", ["tensor", "row", "mixed"])
def test_scaled_fp8_matches_the_float64_product_to_the_output_rounding(name, kind):
    m, n, k = SHAPE
    a, w = fp8_operands(m, n, k, as_dtype(name))
    sa, sb = scales_of(kind, m, n)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    ref = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb
    assert c.dtype == tg.bfloat16 and c.shape == (m, n)
    assert relative_error(c, ref) < 2.5e-3    # bf16 rounds to 2^-9 relative; the product itself is exact in f32
    assert relative_error(c, ref / (sa * sb)) > 0.1   # the scales were applied


PROMOTED_SHAPES = [SHAPE, (1, 264, 320), (16, 256, 1024)]   # C's own tiles; swap-AB at one token, split over K


@pytest.mark.parametrize("shape", PROMOTED_SHAPES, ids=["x".join(map(str, s)) for s in PROMOTED_SHAPES])
@pytest.mark.parametrize("kind", ["tensor", "row", "mixed"])
def test_promoted_scaled_fp8_runs_the_block_scaled_promotion_and_matches_float64(shape, kind, monkeypatch):
    m, n, k = shape
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    sa, sb = scales_of(kind, m, n)
    chosen = []
    choose = designs.choose_block_scaled
    monkeypatch.setattr(designs, "choose_block_scaled", lambda *args, **kw: chosen.append(args[-1]) or choose(
        *args, **kw))
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, promote=True, interpret=True)
    assert chosen == [blockscaling.UNIT]   # promotion alone: no scale arrays for the kernel to read
    ref = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb
    assert c.dtype == tg.bfloat16 and c.shape == (m, n)
    assert relative_error(c, ref) < 2.5e-3
    assert relative_error(c, ref / (sa * sb)) > 0.1   # the epilogue applied the scales


def test_promotion_runs_unscaled_fp8_products_and_epilogues_too():
    m, n, k = SHAPE
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    bias = np.linspace(-1, 1, n, dtype=np.float32)
    c = tg.matmul(a, w.T, promote=True, epilogue=lambda acc, bias: acc + bias, bias=bias, out_dtype=tg.float32,
                  interpret=True)
    ref = a.astype(np.float64) @ w.astype(np.float64).T + bias
    assert c.dtype == tg.float32 and relative_error(c, ref) < 1e-6


def test_promote_is_refused_for_16_bit_operands_whose_products_the_tensor_cores_sum_in_f32():
    a = np.ones((64, 128), tg.bfloat16)
    with pytest.raises(tg.ArgumentError, match="promote=True sums fp8 products .* bf16 products are summed in "
                                               "f32 by the tensor cores already: leave promote out"):
        tg.matmul(a, a.T, promote=True, interpret=True)


@pytest.mark.parametrize("promoted", ["block scales", "promote=True"])
def test_a_batch_invariant_block_scaled_or_promoted_row_has_the_same_bits_at_any_m(promoted):
    """At one token the model would split K (its slices' sums added in another order than one pass's): a
    batch-invariant call sums K in one pass at every M."""
    m, n, k = 130, 2048, 2048
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    rng = np.random.default_rng(2)
    sa, sb = (10.0 ** rng.uniform(-1, 1, (m, kb))).astype(np.float32), np.ones((kb, nb), np.float32)
    scales = (lambda rows: dict(scale_a=sa[rows], scale_b=sb)) if promoted == "block scales" else (
        lambda rows: dict(promote=True))
    assert dict(designs.choose_block_scaled(1, n, k, "float8_e4m3fn", "h200", 132, blockscaling.UNIT))["split_k"] > 1
    full = tg.matmul(a, w.T, out_dtype=tg.float32, batch_invariant=True, interpret=True, **scales(slice(None)))
    one = tg.matmul(a[:1], w.T, out_dtype=tg.float32, batch_invariant=True, interpret=True, **scales(slice(0, 1)))
    assert np.array_equal(one.view(np.uint32), full[:1].view(np.uint32))


def test_per_tensor_scales_passed_as_block_scales_give_the_same_product():
    # tg.matmul's advice for cuBLAS's default accuracy: the block-scaled kernel promotes every 128-wide K block
    m, n, k = SHAPE
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    sa, sb = scales_of("tensor", m, n)
    kb, nb = -(-k // 128), -(-n // 128)
    per_tensor = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    as_blocks = tg.matmul(a, w.T, scale_a=np.full((m, kb), sa, np.float32),
                          scale_b=np.full((kb, nb), sb[0], np.float32), interpret=True)
    ref = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb
    assert relative_error(as_blocks, ref) < 2.5e-3
    assert relative_error(as_blocks, per_tensor.astype(np.float64)) < 1e-3   # bf16 roundings of one f32 sum


@pytest.mark.parametrize("out_dtype,tolerance", [(np.float32, 1e-6), ("float16", 5e-4), (tg.bfloat16, 2.5e-3)])
def test_out_dtype_sets_the_type_of_c(out_dtype, tolerance):
    m, n, k = 64, 128, 128
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    c = tg.matmul(a, w.T, out_dtype=out_dtype, interpret=True)
    assert c.dtype == tg.lang.dtypes.as_dtype(out_dtype)
    assert relative_error(c, a.astype(np.float64) @ w.astype(np.float64).T) < tolerance


def test_16_bit_inputs_take_scales_too():
    a, w = fp8_operands(64, 128, 64, tg.bfloat16)
    sa, sb = scales_of("row", 64, 128)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    assert c.dtype == tg.bfloat16
    assert relative_error(c, (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb) < 2.5e-3


def test_fp8_b_stored_k_by_n_is_refused_naming_the_layout_that_works():
    a, w = fp8_operands(64, 128, 128, tg.float8_e4m3fn)
    with pytest.raises(tg.ArgumentError, match=r"reads e4m3 operands K-major only.*b must be the transpose of a "
                                               r"row-major \[N, K\] array"):
        tg.matmul(a, np.ascontiguousarray(w.T), interpret=True)
    with pytest.raises(tg.ArgumentError, match=r"a must be a row-major \[M, K\] array"):
        tg.matmul(np.ascontiguousarray(a.T).T, w.T, interpret=True)


@pytest.mark.parametrize("scales,message", [
    (lambda m, n: (np.ones((m, 1), np.float32), None), "scale_a= and scale_b= together"),
    (lambda m, n: (np.ones((1, m), np.float32), np.ones((1, n), np.float32)),
     r"scale_a has shape \(1, 64\); .* one per row of a \(64, 1\)"),
    (lambda m, n: (np.ones((m, 1), np.float32), np.ones((n, 1), np.float32)),
     r"scale_b has shape \(128, 1\); .* one per column of b \(1, 128\)"),
    (lambda m, n: (np.ones((m, 1), np.float16), np.ones((1, n), np.float32)), "scale_a is f16; scales are float32"),
])
def test_malformed_scales_are_refused(scales, message):
    a, w = fp8_operands(64, 128, 128, tg.float8_e4m3fn)
    sa, sb = scales(64, 128)
    with pytest.raises(tg.ArgumentError, match=message):
        tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)


def test_an_out_dtype_tg_matmul_cannot_store_is_refused():
    a, w = fp8_operands(64, 128, 128, tg.float8_e4m3fn)
    with pytest.raises(tg.ArgumentError, match="out_dtype= must be float16, bfloat16 or float32, got 'int8'"):
        tg.matmul(a, w.T, out_dtype="int8", interpret=True)


@pytest.mark.parametrize("m", [8192, 16])
def test_scaled_calls_choose_a_design_that_can_apply_the_scales(m):
    params = dict(choose_config(m, 8192, 8192, "float8_e4m3fn", "h200", 132, "mk", "nk", fused=True))
    assert designs.fusable(params)
    assert (params["a_layout"], params["b_layout"]) == ("mk", "nk")
    if m == 8192:
        assert params["tile_n"] in CLASSIC["tile_n"] and params["schedule"] in CLASSIC["schedule"]


# The designs decode-sized scaled calls run (build() parameters beyond the problem's), by name.
DECODE_DESIGNS = {"64-row split 2": dict(tile_m=64, tile_n=128, schedule="pingpong", epi_tile_n=64, split_k=2),
                  "swap-AB split 3": dict(tile_m=64, tile_n=16, schedule="pingpong", epi_tile_n=16, swap_ab=True,
                                          split_k=3),
                  "swap-AB one pass": dict(tile_m=64, tile_n=16, schedule="pingpong", epi_tile_n=16, swap_ab=True)}


@pytest.mark.parametrize("design", list(DECODE_DESIGNS))
@pytest.mark.parametrize("kind", ["tensor", "row"])
def test_decode_designs_apply_the_scales_to_the_whole_sum(design, kind):
    """A split design's reduction pass multiplies the summed partials by the scales, once; a one-pass swap-AB design
    multiplies C^T's tiles by the scales transposed (scale_a along its columns, scale_b along its rows)."""
    m, n, k = 16, 256, 1024
    a, w = fp8_operands(m, n, k, tg.float8_e4m3fn)
    sa, sb = scales_of(kind, m, n)
    spec = epilogue.fused(scaling.scaled, scaling.specs((kind, kind), m, n), m, n, None, tg.bfloat16)
    params = dict(DECODE_DESIGNS[design], stages=4, num_sms=132, a_layout="mk", b_layout="nk")
    stored = scaling.tensors((sa, sb), m, n, k).values()
    c = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())), spec)(a, w, *stored, interpret=True)
    assert c.dtype == tg.bfloat16
    assert relative_error(c, (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb) < 2.5e-3


@pytest.mark.parametrize("kind", ["tensor", "row"])
def test_a_one_token_scaled_call_streams_the_weight_through_one_pass_swap_ab(kind):
    """At M = 1 the scales' epilogue runs on C^T's tiles: every SM streams the weight, with no second pass."""
    m, n, k = 1, 8192, 8192
    spec = epilogue.fused(scaling.scaled, scaling.specs((kind, kind), m, n), m, n, None, tg.bfloat16)
    params = dict(choose_config(m, n, k, "float8_e4m3fn", "h200", 132, "mk", "nk", fused=spec))
    assert params.get("swap_ab") and params.get("split_k", 1) == 1


def test_a_small_scaled_fp8_call_is_right():
    a, w = fp8_operands(16, 256, 512, tg.float8_e4m3fn)
    sa, sb = scales_of("row", 16, 256)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    assert relative_error(c, (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb) < 2.5e-3


@pytest.mark.parametrize("dtype,keywords", [(tg.float8_e4m3fn, {}), (tg.bfloat16, {"out_dtype": np.float32}),
                                            (tg.bfloat16, {"scale_a": np.ones(1, np.float32),
                                                           "scale_b": np.ones(1, np.float32)})])
def test_the_batched_form_refuses_fp8_scales_and_output_types(dtype, keywords):
    a = np.ones((2, 64, 128), dtype)
    w = np.ones((2, 128, 128), dtype)
    with pytest.raises(tg.ArgumentError, match=r"batched \(3-D\) form multiplies f16 or bf16 operands"):
        tg.matmul(a, np.swapaxes(w, 1, 2), interpret=True, **keywords)


def test_scales_and_an_epilogue_together_are_refused_with_how_to_combine_them():
    a, w = fp8_operands(64, 128, 128, tg.float8_e4m3fn)
    sa, sb = scales_of("tensor", 64, 128)
    with pytest.raises(tg.ArgumentError, match="scale_a=/scale_b= or epilogue=, not both: pass the scales to the "
                                               "epilogue as its tensors"):
        tg.matmul(a, w.T, scale_a=sa, scale_b=sb, epilogue=lambda acc: acc, interpret=True)


@pytest.mark.parametrize("kind", ["tensor", "row", "mixed"])
def test_the_scale_specs_of_each_kind_are_those_of_the_scales_as_stored(kind):
    sa, sb = scales_of(kind, 64, 128)
    stored = scaling.tensors((sa, sb), 64, 128, 256)
    kinds = {"tensor": ("tensor", "tensor"), "row": ("row", "row"), "mixed": ("row", "tensor")}[kind]
    assert {name: (spec.shape, spec.dtype) for name, spec in scaling.specs(kinds, 64, 128).items()} == \
        {name: (tuple(t.shape), t.dtype) for name, t in stored.items()}


# A e4m3 and B e5m2 or the other way round, as fp8 training multiplies e5m2 gradients by e4m3 weights; the e5m2
# operand's values reach past e4m3's largest (448), so a kernel reading its bytes as e4m3, or rounding them to it,
# would be far off.
MIXED = [("e4m3", "e5m2"), ("e5m2", "e4m3")]
MIXED_IDS = [f"{a}-{b}" for a, b in MIXED]
MIXED_SHAPES = [SHAPE, (1, 264, 320), (16, 256, 1024)]   # C's own tiles; swap-AB at one token; split over K


def mixed_operands(m, n, k, a_name, b_name):
    """iid-normal a [M, K] and w [N, K] of their own fp8 types, the e5m2 one times 1000."""
    rng = np.random.default_rng(0)
    return tuple((rng.standard_normal(shape, dtype=np.float32) * (1000 if name == "e5m2" else 1)).astype(as_dtype(name))
                 for shape, name in (((m, k), a_name), ((n, k), b_name)))


@pytest.mark.parametrize("shape", MIXED_SHAPES, ids=["x".join(map(str, s)) for s in MIXED_SHAPES])
@pytest.mark.parametrize("a_name, b_name", MIXED, ids=MIXED_IDS)
def test_mixed_fp8_operands_multiply_as_their_own_types(shape, a_name, b_name):
    m, n, k = shape
    a, w = mixed_operands(m, n, k, a_name, b_name)
    assert max(np.abs(x.astype(np.float32)).max() for x in (a, w)) > 448   # past e4m3's range
    sa, sb = scales_of("row", m, n)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    assert c.dtype == tg.bfloat16
    assert relative_error(c, (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb) < 2.5e-3


@pytest.mark.parametrize("m", [200, 16])
@pytest.mark.parametrize("a_name, b_name", MIXED, ids=MIXED_IDS)
def test_mixed_fp8_operands_take_block_scales(m, a_name, b_name):
    """C's own tiles at 200 rows; C^T's (swap-AB, the scales read from GMEM) at 16."""
    n, k = 264, 384
    a, w = mixed_operands(m, n, k, a_name, b_name)
    rng = np.random.default_rng(2)
    sa = rng.uniform(0.5, 2, (m, k // 128)).astype(np.float32)
    sb = rng.uniform(0.5, 2, (k // 128, -(-n // 128))).astype(np.float32)
    c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, interpret=True)
    ref = sum((a[:, j * 128:(j + 1) * 128].astype(np.float64) @ w[:, j * 128:(j + 1) * 128].astype(np.float64).T)
              * sa[:, j:j + 1] * np.repeat(sb[j], 128)[None, :n] for j in range(k // 128))
    assert relative_error(c, ref) < 2.5e-3


def test_a_mixed_call_builds_its_kernel_for_b_s_own_type():
    a, w = mixed_operands(16, 256, 512, "e4m3", "e5m2")
    sa, sb = dispatch._spec(a, "a"), dispatch._spec(w.T, "b")
    call = dispatch.resolve(a, w.T, sa, sb, scales_of("tensor", 16, 256), interpret=True)
    kernel = call.build(call.choose())
    assert [spec.dtype for spec in kernel.specs[:2]] == [tg.float8_e4m3fn, tg.float8_e5m2]


@pytest.mark.slow
@pytest.mark.parametrize("swap_ab", [False, True], ids=["tiles-of-c", "swap-ab"])
def test_a_mixed_fp8_design_compiles_to_mixed_wgmmas(swap_ab):
    """The MMA's A is b where swapped: its instructions then name B's type first."""
    m, n, k = (16 if swap_ab else 512), 512, 512
    params = dict(tile_m=64, tile_n=16, epi_tile_n=16, swap_ab=True) if swap_ab else dict(tile_n=128)
    kernel = hopper_matmul.build(m, n, k, dtype=tg.float8_e4m3fn, b_dtype=tg.float8_e5m2, stages=4,
                                 schedule="pingpong", a_layout="mk", b_layout="nk", **params)
    specs = operand_specs(m, n, k, tg.float8_e4m3fn, "mk", "nk", tg.float8_e5m2)
    ptx = kernel.lower(*specs, arch="sm_90a").compile().ptx
    pair = "e5m2.e4m3" if swap_ab else "e4m3.e5m2"
    assert f"k32.f32.{pair}" in ptx


def test_fp8_by_a_16_bit_operand_is_refused_naming_the_pairs_tg_matmul_takes():
    a, _ = fp8_operands(64, 128, 128, tg.float8_e4m3fn)
    w = np.ones((128, 128), tg.float16)
    with pytest.raises(tg.ArgumentError, match="takes arrays a and b both f16, both bf16 or each one of e4m3, e5m2; "
                                               "got e4m3 and f16"):
        tg.matmul(a, w.T, interpret=True)


def test_the_flagship_refuses_operand_types_the_tensor_cores_do_not_take_together():
    with pytest.raises(ValueError, match="a of f16 and b of e4m3: WGMMA takes A and B both f16"):
        hopper_matmul.build(256, 256, 256, dtype=tg.float16, b_dtype=tg.float8_e4m3fn)
