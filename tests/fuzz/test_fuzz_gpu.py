"""On the H200: hundreds of bad calls each end in a tg error, >= 200 random legal shapes (M, N, K from 1 to
several thousand, outputs poisoned) are all right, and nothing faults the GPU. Each case runs in a worker process
so a fault cannot take the rest down. TILEGEMM_FUZZ_OUT=<dir> keeps the summary and every case's outcome."""
import json
import os

import pytest

from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]

GOOD_SHAPES = int(os.environ.get("TILEGEMM_FUZZ_GOOD", "200"))


def test_no_call_faults_the_gpu_or_returns_a_silent_wrong_answer():
    pytest.importorskip("torch")
    from .harness import run
    summary, results = run(GOOD_SHAPES, workers=int(os.environ.get("TILEGEMM_FUZZ_WORKERS", "12")))
    out = os.environ.get("TILEGEMM_FUZZ_OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "fuzz.json"), "w") as f:
            json.dump(dict(summary=summary, results=results), f, indent=1)
    findings = [r for r in results if r["outcome"] not in ("refused", "correct")]
    report = "\n".join(f"{r['outcome']}: {r['name']}: {r['detail']}" for r in findings[:40])
    assert summary["run"] == summary["cases"], f"only {summary['run']} of {summary['cases']} cases ran\n{report}"
    assert summary["fuzz_bad_calls"] >= 200 and summary["fuzz_good_shapes"] >= 200
    assert not findings, f"{summary}\n{report}"
