"""benchmarks/bench_tensor_parallel.py off the GPU: every contender runs (a one-rank gloo group, the numpy
interpreter, tiny sizes), the checks compare their y's, and the summary's figures are the ratios the standing file
takes."""
import importlib

import pytest

pytest.importorskip("torch.distributed.tensor")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

import tilegemm.testing as tt  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return importlib.import_module("bench_tensor_parallel")   # after the importorskip above


@pytest.fixture
def one_rank_mesh(tmp_path):
    """A one-rank gloo process group and its mesh, for the test's duration."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rendezvous", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


def test_every_contender_runs_and_the_checks_compare_their_ys(bench, one_rank_mesh):
    with torch.no_grad():
        found = bench.contenders(16, 32, 64, torch.device("cpu"), one_rank_mesh)
        outputs = {c.name: bench.waited(c.run()) for c in found}
    assert {(c.program, c.op) for c in found} == {(bench.ALL_REDUCE, None)} | {
        (program, op) for program in (bench.ONE_GPU, bench.BY_HAND, bench.DTENSOR, bench.PRODUCTS)
        for op in bench.OPS}
    checked = bench.checks(outputs, world=1)
    assert len(checked) == 4, checked
    assert all(error <= 3 * tt.unit_roundoff("bfloat16") for error in checked.values()), checked


def test_the_standing_figures_are_one_gpu_over_two_and_torch_mm_over_tilegemm_on_two(bench, one_rank_mesh):
    found = bench.contenders(16, 32, 64, torch.device("cpu"), one_rank_mesh)
    per_run = {(bench.ONE_GPU, "tilegemm"): 12.0, (bench.ONE_GPU, "torch.mm"): 12.6,
               (bench.BY_HAND, "tilegemm"): 6.4, (bench.BY_HAND, "torch.mm"): 6.6,
               (bench.DTENSOR, "tilegemm"): 6.5, (bench.DTENSOR, "torch.mm"): 6.7,
               (bench.PRODUCTS, "tilegemm"): 6.0, (bench.PRODUCTS, "torch.mm"): 6.2, (bench.ALL_REDUCE, None): 0.4}
    samples = {c.name: [per_run[c.program, c.op] * f for f in (0.99, 1.0, 1.02)] for c in found}
    rows = bench.rows_of(found, samples, flops=4.0 * 8192 * 8192 * 28672)
    figures = bench.summary({r["contender"]: r["ms"] for r in rows}, world=2)
    assert figures["tp2_speedup"] == pytest.approx(12.0 / 6.4)
    assert figures["tp2_vs_torch"] == pytest.approx(6.6 / 6.4)
    assert figures["all_reduce_share"] == pytest.approx(0.4 / 6.4)
    assert figures["exposed_communication_share"] == pytest.approx((6.4 - 6.0) / 6.4)
    by_hand = next(r for r in rows if r["contender"] == bench.name(bench.BY_HAND, "tilegemm"))
    assert by_hand["spread_pct"] == pytest.approx(100 * 0.03)
    printed = "\n".join(bench.table(rows, figures, world=2))
    assert "2 GPUs over one (strong scaling): tilegemm 1.875x" in printed
