"""benchmarks/bench_epilogue.py off the GPU: each tg epilogue computes what its torch function does (the
interpreter beside float32 torch on the CPU), and the summary's figures are the torch contenders over the fused call."""
import importlib

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bench():
    return importlib.import_module("bench_epilogue")   # after the importorskip above


@pytest.mark.parametrize("name", ["bias_gelu", "silu_residual"])
def test_the_fused_epilogue_computes_what_the_torch_ops_do(bench, name):
    import tilegemm as tg
    tg_fn, torch_fn, _ = bench.EPILOGUES[name]
    a, b, tensors = bench.inputs(200, 136, 72, name, "cpu")
    out = tg.matmul(a.numpy(), b.numpy(), epilogue=tg_fn, interpret=True, **{k: v.numpy() for k, v in tensors.items()})
    ref = torch_fn(a.float(), b.float(), *(t.float() for t in tensors.values()))
    assert bench.relative_error(torch.from_numpy(out), ref) < bench.TOLERANCE


def test_the_figures_are_torch_over_the_fused_call_per_square_size(bench):
    timings = [("bias_gelu", 4096, bench.FUSED, 0.25), ("bias_gelu", 4096, bench.EAGER, 0.30),
               ("bias_gelu", 4096, bench.COMPILED, 0.275), ("silu_residual", 8192, bench.FUSED, 2.0),
               ("silu_residual", 8192, bench.EAGER, 2.2), ("silu_residual", 8192, bench.COMPILED, 2.1)]
    rows = [dict(epilogue=e, contender=c, m=s, n=s, k=s, ms=ms) for e, s, c, ms in timings]
    figures = bench.summary(rows)
    assert figures == pytest.approx({"fused_epilogue_ratio_4096": 1.2, "fused_vs_compile_ratio_4096": 1.1,
                                     "fused_epilogue_ratio_silu_residual_8192": 1.1,
                                     "fused_vs_compile_ratio_silu_residual_8192": 1.05})


def test_without_a_torch_compile_row_the_ratio_to_it_is_left_out(bench):
    rows = [dict(epilogue="bias_gelu", contender=c, m=4096, n=4096, k=4096, ms=ms)
            for c, ms in [(bench.FUSED, 0.25), (bench.EAGER, 0.30)]]
    assert bench.summary(rows) == pytest.approx({"fused_epilogue_ratio_4096": 1.2})
