"""tg.tune_matmul on the GPU: every candidate runs with its output poisoned and checked, the chosen design is
recorded, and tg.matmul then runs it right (with the operands as a user passes them: a weight stored [N, K] too)."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import dispatch, tuning
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
