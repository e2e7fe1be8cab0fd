"""benchmarks/bench_fp8.py off the GPU: amax quantization (per tensor, row and block), the standing figures its
summary takes, and the kernels it builds for each call (fp8 of one type or two)."""
import importlib
import sys

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bench():
    return importlib.import_module("bench_fp8")   # after the importorskip above


@pytest.mark.parametrize("scaling,scale_shape", [("tensor", ()), ("row", (4, 1))])
def test_quantization_maps_each_amax_to_the_largest_e4m3_value(bench, scaling, scale_shape):
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    x8, scale = bench.quantize(x, scaling)
    assert x8.dtype == torch.float8_e4m3fn and tuple(scale.shape) == scale_shape
    amax = x8.float().abs().amax() if scaling == "tensor" else x8.float().abs().amax(dim=1)
    assert torch.all(amax == 448.0)
    assert torch.allclose(x8.float() * scale, x, rtol=2 ** -3)   # e4m3 keeps 3 mantissa bits


def test_e5m2_quantization_maps_each_amax_to_the_largest_e5m2_value(bench):
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    x8, scale = bench.quantize(x, "row", "e5m2")
    assert x8.dtype == torch.float8_e5m2 and tuple(scale.shape) == (4, 1)
    assert torch.all(x8.float().abs().amax(dim=1) == 57344.0)
    assert torch.allclose(x8.float() * scale, x, rtol=2 ** -2)   # e5m2 keeps 2 mantissa bits


@pytest.mark.parametrize("text,types", [("e5m2,e4m3", ("e5m2", "e4m3")), ("e4m3,e5m2", ("e4m3", "e5m2")),
                                        ("e4m3,e4m3", ("e4m3", "e4m3"))])
def test_types_name_a_and_ws_fp8_types(bench, text, types):
    assert bench.parse_types(text) == types


@pytest.mark.parametrize("text", ["e5m2,e5m2", "e5m2", "e4m3,e4m3,e4m3", "e4m3,bf16"])
def test_types_cublas_refuses_or_that_are_not_fp8_are_refused_with_the_legal_ones(bench, text):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="each of e4m3, e5m2; not both e5m2"):
        bench.parse_types(text)


def test_a_rows_dtype_names_the_mixed_types_as_a_by_w(bench):
    assert bench.dtype_label("tensor") == "e4m3 tensor"
    assert bench.dtype_label("row", ("e5m2", "e4m3")) == "e5m2xe4m3 row"


@pytest.mark.parametrize("rows", [1, 128])
def test_block_quantization_maps_each_blocks_amax_to_the_largest_e4m3_value(bench, rows):
    x = torch.randn(200, 300, generator=torch.Generator().manual_seed(0))   # partial blocks at both edges
    x8, scale = bench.quantize_blocks(x, rows)
    assert tuple(scale.shape) == (-(-200 // rows), 3)
    for r in range(scale.shape[0]):
        for c in range(scale.shape[1]):
            block = x8[r * rows:(r + 1) * rows, c * 128:(c + 1) * 128].float()
            assert block.abs().amax() == 448.0
    subnormal_step = float(scale.max()) * 2 ** -9   # e4m3's subnormal spacing, scaled: small elements of a block
    assert torch.allclose(x8.float() * bench.expand_scales(scale, rows, 200, 300), x, rtol=2 ** -3,
                          atol=subnormal_step)


def test_the_summary_takes_tg_matmuls_ratios_at_8192_and_its_block_scaled_rate(bench):
    def row(contender, scaling, shape, ratio, tflops=0.0, types=bench.SAME):
        return dict(contender=contender, scaling=scaling, dtype=bench.dtype_label(scaling, types), m=shape[0],
                    n=shape[1], k=shape[2], vs_cublas=ratio, tflops=tflops)
    big, other, deepseek = (8192, 8192, 8192), (4096, 8192, 4096), (4096, 7168, 16384)
    rows = [row("cuBLAS", "tensor", big, 1.0), row("tg.matmul", "tensor", big, 1.07),
            row("tg.matmul", "tensor", big, 1.2, types=("e5m2", "e4m3")),   # not the types: no figure
            row("tg.matmul", "row", big, 1.12), row("tg.matmul", "row", other, 0.9),
            row("cuBLAS", "block", deepseek, 1.0, 1500.0), row("tg.matmul", "block", deepseek, 0.95, 1420.0),
            row("tg.matmul", "block", big, 0.9, 1300.0)]
    assert bench.summary(rows) == {"fp8_tensorwise_ratio_8192": 1.07, "fp8_rowwise_ratio_8192": 1.12,
                                   "fp8_blockscaled_tflops_4096x7168x16384": 1420.0}


def test_the_designs_a_scaled_call_may_run_include_decodes_and_one_of_each_family_with_per_family(bench):
    from tilegemm.ops import designs
    target = ("NVIDIA H200", 132)
    every = [dict(p) for p, _ in bench.ranked_designs(1, 8192, 8192, "tensor", target)]
    assert any(p.get("swap_ab") and p.get("split_k", 1) == 1 for p in every)   # the scales run on C^T's tiles
    assert any(p.get("split_k", 1) > 1 for p in every)                          # or in the reduction pass
    assert all(designs.fusable(p, transposable=True) for p in every)
    firsts = [designs.family(dict(p)) for p, _ in bench.ranked_designs(1, 8192, 8192, "tensor", target, 1)]
    assert sorted(firsts) == sorted(set(designs.family(p) for p in every))


def test_tuned_compiles_what_tg_tune_matmul_will_time_for_the_call_the_pick_first(bench):
    target = ("NVIDIA H200", 132)
    found = bench.tuning_candidates(4096, 7168, 16384, "block", target)
    assert found[0][0] == bench.design_of(4096, 7168, 16384, "block", target)[0]
    assert {dict(p)["tile_m"] for p, _ in found} == {128, 256}   # the H100 and the H200 rank them differently
    scaled = bench.tuning_candidates(8192, 8192, 8192, "row", target)
    assert scaled[0][0] == bench.design_of(8192, 8192, 8192, "row", target)[0] and len(scaled) > 1


def test_a_design_given_by_hand_is_the_pick_with_those_fields_replaced(bench):
    from design_contenders import parse_fields
    target = ("NVIDIA H200", 132)
    pick = dict(bench.design_of(8192, 8192, 8192, "block", target)[0])
    given = [parse_fields("cluster_m=2")]
    (params, seconds), = bench.given_designs(8192, 8192, 8192, "block", target, given)
    params = dict(params)
    assert params.pop("cluster_m") == 2 and params.pop("num_sms") <= 132
    assert {key: v for key, v in pick.items() if key != "num_sms"} == params   # the pick's tiles, stages, tile_k kept
    assert seconds > 0


def test_a_design_the_builder_refuses_is_named_with_the_call(bench):
    from design_contenders import parse_fields
    with pytest.raises(ValueError, match="refuses design .* 8192x8192x8192 tensor-scaled"):
        bench.given_designs(8192, 8192, 8192, "tensor", ("NVIDIA H200", 132), [parse_fields("tile_n=4096")])


def test_a_design_the_block_scaled_kernel_refuses_says_why(bench):
    from design_contenders import parse_fields
    with pytest.raises(ValueError, match="block-scaled: a block-scaled kernel runs .* tile_n dividing 128"):
        bench.given_designs(4096, 7168, 16384, "block", ("NVIDIA H200", 132), [parse_fields("tile_n=192,stages=4")])


def test_two_designs_that_share_a_name_are_refused_rather_than_merged(bench):
    from design_contenders import parse_fields
    target = ("NVIDIA H200", 132)
    twins = [parse_fields(f"tile_n=192,schedule=pingpong,stages=4,trigger_dependents={t}") for t in (0, 1)]
    ranked = bench.given_designs(8192, 8192, 8192, "tensor", target, twins)   # a label does not name the trigger
    with pytest.raises(ValueError, match="two designs share a name"):
        bench.design_launchers(8192, 8192, 8192, "tensor", ranked, (None, None, None, None))


def test_a_mixed_type_call_times_the_kernel_tg_matmul_builds_for_it(bench):
    import numpy as np
    import tilegemm as tg
    from tilegemm.lang.dtypes import as_dtype
    from tilegemm.ops import designs, dispatch
    m, n, k, types = 256, 512, 1024, ("e5m2", "e4m3")
    a, w = np.zeros((m, k), as_dtype(types[0])), np.zeros((n, k), as_dtype(types[1]))
    scales = np.ones((m, 1), np.float32), np.ones((1, n), np.float32)
    call = dispatch.resolve(a, w.T, dispatch._spec(a, "a"), dispatch._spec(w.T, "b"), scales,
                            out_dtype=tg.bfloat16, interpret=True)   # tg.matmul's call, budgeted as an H200's
    params, args = bench.design_of(m, n, k, "row", ("h200", 132), types)
    assert params == call.choose()
    ours, theirs = (d.kernel.lower(*d.specs, *d.carried) for d in (designs.build(m, n, k, *args), call.build(params)))
    assert ours.cache_key() == theirs.cache_key()   # precompiling it fills the cache tg.matmul's call reads
    assert "cutlass.Float8E5M2, cutlass.Float8E4M3FN" in ours.source


def test_designs_given_by_hand_are_checked_with_ws_own_type(bench):
    from design_contenders import parse_fields
    target = ("NVIDIA H200", 132)
    given = [parse_fields("stages=4")]
    (params, _), = bench.given_designs(8192, 8192, 8192, "tensor", target, given, ("e4m3", "e5m2"))
    assert "b_dtype" not in dict(params)   # the label's design; builder_args adds W's type
    assert ("b_dtype", "float8_e5m2") in bench.builder_args(8192, 8192, 8192, "tensor", params,
                                                             ("e4m3", "e5m2"))[1]


def test_mixed_types_with_block_scales_are_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_fp8.py", "--types", "e5m2,e4m3", "--scalings", "block"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "takes --scalings tensor row: block scales are e4m3's here" in capsys.readouterr().err


def test_deepgemm_is_timed_where_installed_and_left_out_where_not(monkeypatch):
    from peers import deepgemm_fp8
    a8, w8 = torch.zeros(256, 512), torch.zeros(384, 512)
    scale_a, scale_w = torch.ones(256, 4), torch.ones(3, 4)
    monkeypatch.setattr(deepgemm_fp8, "deep_gemm", None)
    assert deepgemm_fp8.contender(a8, w8, scale_a, scale_w) is None

    calls = []

    class FakeDeepGemm:
        @staticmethod
        def gemm_fp8_fp8_bf16_nt(lhs, rhs, out):
            calls.append((lhs, rhs, out))
    monkeypatch.setattr(deepgemm_fp8, "deep_gemm", FakeDeepGemm)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    launch, out = deepgemm_fp8.contender(a8, w8, scale_a, scale_w)
    assert out.shape == (256, 384) and out.dtype == torch.bfloat16
    assert len(calls) == 1   # compiled (called once) before it is timed
    launch()
    (lhs, lhs_scales), (rhs, rhs_scales), into = calls[-1]
    assert all(got is given for got, given in zip((lhs, lhs_scales, rhs, rhs_scales, into),
                                                  (a8, scale_a, w8, scale_w, out)))
