"""tg.tune_matmul on the GPU: every candidate runs with its output poisoned and checked, the chosen design is
recorded, and tg.matmul then runs it right (with the operands as a user passes them: a weight stored [N, K] too; fp8
scaled per tensor, per row, by blocks, and promoted)."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import blockscaling, dispatch, tuning
from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    yield tmp_path
    dispatch.forget_prepared()   # later tests' calls choose their designs afresh, without this test's records


def assert_matches(c, a, b):
    out = c.float().cpu().numpy()
    assert not np.isnan(out).any(), "an element of the poisoned output was never written"
    tt.assert_close(out, (a.double() @ b.double()).cpu().numpy(), k=a.shape[1], dtype=tg.float16)


@pytest.mark.parametrize("m, n, k, weight", [(777, 3000, 1400, False), (40, 1016, 520, True)],
                         ids=["ragged", "decode-weight-nk"])
def test_tuning_checks_every_candidate_and_tg_matmul_runs_the_recorded_design(cache_dir, m, n, k, weight):
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
    b = (torch.randn(n, k, device="cuda", dtype=torch.float16, generator=g).T if weight
         else torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g))
    result = tg.tune_matmul(a, b, rounds=2)
    assert result.recorded and result.pick.measured_s is not None
    for trial in result.trials:   # every design ran and passed its check (a failure would say why)
        assert trial.reason is None, f"{trial.label}: {trial.reason}"
        assert trial.error < tuning.TOLERANCE
    assert result.best is tuning.chosen(result.trials)
    params = dict(dispatch.choose_config(m, n, k, "float16", *dispatch._target(False), "mk",
                                         "nk" if weight else "kn"))
    assert params == result.best.params
    assert_matches(tg.matmul(a, b, debug=True), a, b)   # the general path, output poisoned
    assert_matches(tg.matmul(a, b), a, b)               # and the prepared one


def fp8_scaled(m, n, k, kind):
    """a [M, K], w [N, K] (e4m3) and scales of `kind` ('tensor', 'row', 'block': scale_a M-major and scale_b the
    transpose of a row-major [Nb, Kb], as torch._scaled_mm takes them) on the GPU, and the float64 result."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a, w = (torch.randn(*shape, device="cuda", generator=g).to(torch.float8_e4m3fn) for shape in ((m, k), (n, k)))
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    if kind == "block":
        sa, sb = (0.5 + torch.rand(shape, device="cuda", generator=g) for shape in ((kb, m), (nb, kb)))
        sa, sb = sa.t(), sb.t()
        block = blockscaling.BLOCK
        a_deq = a.double() * sa.double().repeat_interleave(block, dim=1)[:, :k]
        w_deq = w.double() * sb.double().t().repeat_interleave(block, 0).repeat_interleave(block, 1)[:n, :k]
        return a, w, sa, sb, a_deq @ w_deq.t()
    shapes = {"tensor": ((), ()), "row": ((m, 1), (1, n))}[kind]
    sa, sb = (0.5 + torch.rand(shape, device="cuda", generator=g) for shape in shapes)
    return a, w, sa, sb, (a.double() @ w.double().t()) * sa.double() * sb.double()


@pytest.mark.parametrize("m, n, k, kind, promote", [(777, 3000, 1408, "tensor", False), (64, 1016, 2048, "row", False),
                                                    (777, 3000, 1408, "row", True), (1000, 1032, 1040, "block", False),
                                                    (4096, 2048, 1024, "block", False)],
                         ids=["tensor", "row-decode", "row-promoted", "block-ragged", "block"])
def test_tuning_an_fp8_call_checks_every_candidate_and_tg_matmul_runs_the_recorded_design(cache_dir, m, n, k, kind,
                                                                                           promote):
    a, w, sa, sb, reference = fp8_scaled(m, n, k, kind)
    result = tg.tune_matmul(a, w.T, scale_a=sa, scale_b=sb, promote=promote, rounds=2)
    assert result.recorded and len(result.trials) > 1
    for trial in result.trials:
        assert trial.reason is None, f"{trial.label}: {trial.reason}"
    call = dispatch.resolve(a, w.T, dispatch._spec(a, "a"), dispatch._spec(w.T, "b"), (sa, sb), promote=promote)
    assert dict(call.choose()) == result.best.params
    for debug in (True, False):   # the general path, output poisoned; then the prepared one
        c = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, promote=promote, debug=debug).double()
        assert not torch.isnan(c).any(), "an element of the poisoned output was never written"
        assert float(torch.linalg.norm(c - reference) / torch.linalg.norm(reference)) < 8e-3
