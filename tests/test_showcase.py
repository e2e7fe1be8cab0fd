"""The main job (`python -m tilegemm`) and every example script run their stages on a machine without a GPU."""
import functools
import os
import subprocess
import sys

import pytest

from tilegemm.runtime import device_count
from tilegemm.showcase import load_example, main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_main_job_traces_models_compiles_and_interprets_the_flagship():
    run = subprocess.run([sys.executable, "-m", "tilegemm", "--shape", "2048", "2048", "2048"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for stage in ("== trace + verify", "== budget table", "== lower + compile for sm_90a",
                  "== numpy interpreter vs numpy", "== GPU"):
        assert stage in out
    assert "instructions in PTX: wgmma, tma load, tma store, setmaxnreg" in out
    assert "WGMMAs: kept in flight" in out or "WGMMAs:" not in out   # the SASS check needs nvdisasm
    assert "(ok," in out and "WRONG" not in out
    if device_count() == 0:
        assert "no CUDA GPU on this machine: skipped the GPU run" in out


@pytest.mark.parametrize("name", ["hopper_v1_smem", "hopper_transposed_operands", "blackwell_4_collective"])
def test_example_scripts_run_every_stage_they_can(name, capsys):
    module = load_example(os.path.join(ROOT, "examples", name + ".py"))
    assert main(module, ["--shape", "256", "256", "128", "--skip", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "predicted time" in out and "compiled for" in out and "relative error" in out


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_a_gpu_the_main_job_runs_the_kernel_and_times_it_beside_cublas(capsys):
    module = load_example(os.path.join(ROOT, "examples", "hopper_flagship.py"))
    assert main(module, ["--shape", "1024", "1024", "1024", "--skip", "budget", "interpret"]) == 0
    out = capsys.readouterr().out
    assert "relative error vs numpy" in out and "(ok)" in out and "x (mean of 50 launches each" in out


def test_the_model_budgets_for_the_gpu_in_use_where_it_is_of_the_kernels_architecture(monkeypatch):
    import tilegemm.runtime
    from tilegemm import showcase
    from tilegemm.ops import dispatch
    from tilegemm.runtime import occupancy
    from tilegemm.runtime.device import Device
    h100 = Device(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 232448, 50 * 2**20)
    monkeypatch.setattr(showcase, "gpu_present", lambda: False)
    assert showcase.model_device("sm_90a") == "h200" and showcase.model_device("sm_100a") == "b200"
    monkeypatch.setattr(showcase, "gpu_present", lambda: True)
    monkeypatch.setattr(tilegemm.runtime, "current_device", lambda: h100)
    monkeypatch.setattr(occupancy, "resident_clusters", lambda dev, sizes: ((2, 66), (4, 30)))
    monkeypatch.setattr(dispatch, "live_sheet", functools.cache(dispatch.live_sheet.__wrapped__))   # a fresh cache
    sheet = showcase.model_device("sm_90a")
    assert str(sheet) == "NVIDIA H100 80GB HBM3" and sheet.resident_clusters == ((2, 66), (4, 30))
    assert showcase.model_device("sm_100a") == "b200"            # a Blackwell kernel is not budgeted for the H100
    assert showcase.model_device("sm_90a", requested="h200") == "h200"
