"""The `tilegemm` command (python -m tilegemm): run, bench, tune, precompile, and --help for each; a kernel file's
contract is checked with errors that name what is missing."""
import os
import subprocess
import sys
import tomllib

import pytest

import tilegemm as tg
from tilegemm import cli
from tilegemm.lower import cache
from tilegemm.runtime import device_count

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V0 = os.path.join(ROOT, "examples", "hopper_v0_naive.py")
V1 = os.path.join(ROOT, "examples", "hopper_v1_smem.py")

OWN_KERNEL = '''"""c = a @ b with one 32x32 tile per block, read straight from GMEM (a user's file, with no CONFIG)."""
import tilegemm as tg

ARCH = "sm_90a"
SHAPES = {"interpret": [(40, 24, 8)], "benchmark": (256, 256, 128)}


def build(m, n, k, dtype=tg.float16):
    @tg.kernel(out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, 32), tg.cdiv(n, 32)), grid_names=("m", "n"))
    def mine(a, b, c):
        rows, cols = tg.ds(tg.axis_index("m") * 32, 32), tg.ds(tg.axis_index("n") * 32, 32)
        acc = tg.fori_loop(0, tg.cdiv(k, 32), lambda ki, acc: tg.dot(a.at[rows, tg.ds(ki * 32, 32)],
                                                                     b.at[tg.ds(ki * 32, 32), cols], acc),
                           tg.zeros((32, 32), tg.float32))
        c.at[rows, cols][...] = acc.astype(dtype)
    return mine
'''


def help_text(capsys, *argv):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


# ----------------------------------------------------------------------------- help

def test_help_lists_the_commands_the_kernel_file_contract_and_the_cache_directory(capsys):
    text = help_text(capsys)
    for command in ("run", "bench", "tune", "tune-matmul", "precompile"):
        assert f"\n    {command}" in text
    assert "Without a command, runs `tilegemm run`" in text
    assert 'ARCH = "sm_90a"' in text and "SHAPES = {" in text and "build(m, n, k, dtype=tg.float16" in text
    assert "$TILEGEMM_CACHE_DIR (default ~/.cache/tilegemm)" in text


@pytest.mark.parametrize("command, says", [
    ("run", "FILE the kernel file the main job runs (default: examples/hopper_flagship.py"),
    ("bench", "Runs benchmarks/bench_hopper.py"),
    ("tune", "--param NAME=V1,V2 a keyword of the file's build and the values to try"),
    ("precompile", "--shapes MxNxK [MxNxK ...]"),
    ("tune-matmul", "--weight b is a weight stored [N, K], as tg.matmul(x, w.T) takes it"),
])
def test_every_command_has_its_own_help(capsys, command, says):
    assert says in " ".join(help_text(capsys, command).split())


# ----------------------------------------------------------------------------- run

def test_run_takes_a_kernel_file_with_or_without_the_command_name(capsys):
    for argv in (["run", V1], [V1]):
        assert cli.main([*argv, "--shape", "256", "256", "128", "--skip", "compile", "gpu"]) == 0
        out = capsys.readouterr().out
        assert "tilegemm example hopper_v1_smem (sm_90a)" in out and "predicted time" in out and "(ok," in out


def test_run_takes_a_users_own_kernel_file(tmp_path, capsys):
    path = tmp_path / "my_kernel.py"
    path.write_text(OWN_KERNEL)
    assert cli.main(["run", str(path), "--skip", "compile", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "traced and verified mine at (256, 256, 128)" in out and "interpreted (40, 24, 8)" in out


def test_a_missing_file_is_named_with_the_contract(capsys):
    assert cli.main(["run", "no_such_kernel.py"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tilegemm run: no such file: no_such_kernel.py") and "A kernel file is a Python" in err


def test_a_file_missing_parts_of_the_contract_names_each_with_an_example(tmp_path, capsys):
    path = tmp_path / "partial.py"
    path.write_text("def build(m, n, k, dtype=None):\n    pass\nSHAPES = {'interpret': [(1, 2)]}\n")
    assert cli.main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} is not a tilegemm kernel file:" in err
    assert "  - ARCH is not defined; it names the architecture to compile for: 'sm_90a' or 'sm_100a'" in err
    assert "  - SHAPES['interpret'] is [(1, 2)]; it lists the (M, N, K) shapes" in err
    assert "  - SHAPES['benchmark'] is None; it is one (M, N, K), e.g. (4096, 4096, 4096)" in err
    assert "build" not in err.split("\n\n")[0], "build is defined"


def test_python_dash_m_tilegemm_runs_a_file_given_first():
    run = subprocess.run([sys.executable, "-m", "tilegemm", V0, "--shape", "128", "128", "64", "--skip", "compile",
                          "gpu", "budget"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "tilegemm example hopper_v0_naive (sm_90a)" in run.stdout


def test_the_console_script_is_the_cli():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts == {"tilegemm": "tilegemm.cli:main"}


# ----------------------------------------------------------------------------- bench and tune

@pytest.mark.skipif(device_count() > 0, reason="a GPU is present: the benchmark would run")
def test_bench_without_a_gpu_says_so_and_what_works_instead(capsys):
    assert cli.main(["bench", "hopper", "--quick"]) == 1
    err = capsys.readouterr().err
    assert "cuda-python finds no CUDA device on this machine" in err and "`tilegemm tune`" in err


@pytest.mark.skipif(device_count() > 0, reason="a GPU is present: the tuning would run")
def test_tune_matmul_without_a_gpu_says_so(capsys):
    assert cli.main(["tune-matmul", "--shapes", "777x3000x1400"]) == 1
    assert "cuda-python finds no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize("args, says", [
    (["--dtype", "float8_e4m3fn"], "fp8 calls are scaled: --scales tensor|row|block"),
    (["--dtype", "float16", "--scales", "row"], "--scales and --promote tune fp8 calls"),
    (["--dtype", "float8_e4m3fn", "bfloat16", "--scales", "block"], "--scales and --promote tune fp8 calls"),
])
def test_tune_matmul_refuses_fp8_without_scales_and_scales_without_fp8(capsys, args, says):
    assert cli.main(["tune-matmul", "--shapes", "256x256x256", *args]) == 2
    assert says in capsys.readouterr().err


def test_tune_ranks_a_files_space_with_the_model(capsys):
    assert cli.main(["tune", V1, "--param", "tile_n=32,64", "--param", "tile_k=64,128", "--shape", "1024", "1024",
                     "1024", "--no-measure"]) == 0
    captured = capsys.readouterr()
    assert "(PREDICTED by the model, not measured)" in captured.out
    assert sum(line.startswith(("1 ", "2 ", "3 ", "4 ")) for line in captured.out.splitlines()) == 4
    assert "the ranking is the performance model's prediction" in captured.err


def test_tune_asks_for_the_values_to_try(capsys):
    assert cli.main(["tune", V1]) == 2
    assert "name the values to try, e.g. --param tile_n=128,192,256" in capsys.readouterr().err


def test_parameter_values_are_python_literals_or_words():
    assert cli._param("tile_n=128,192") == ("tile_n", [128, 192])
    assert cli._param("schedule=pingpong,'cooperative'") == ("schedule", ["pingpong", "cooperative"])


# ----------------------------------------------------------------------------- precompile

def test_precompile_fills_the_cache_that_later_compiles_read(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    argv = ["precompile", V0, "--shapes", "256x256x128", "200x136x72", "--jobs", "2"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"compiling 2 kernel(s) into {tmp_path} with 2 process(es)" in out
    assert "hopper_v0_naive.py 256x256x128 float16: compiled" in out
    assert len(os.listdir(tmp_path / "kernels")) == 2
    assert cli.main(argv[:4] + ["--jobs", "1"]) == 0
    assert "256x256x128 float16: already in the cache" in capsys.readouterr().out
    cache.memory_clear()
    kernel, specs, arch = cli.job_kernel(V0, (200, 136, 72), "float16")
    lowered = kernel.lower(*specs, arch=arch)
    lowered.compile()
    assert lowered.cache_hit == "disk"


@pytest.mark.skipif(device_count() > 0, reason="on a GPU tg.matmul picks for that GPU")
def test_precompile_without_a_file_compiles_the_kernel_tg_matmul_picks():
    from tilegemm.ops import dispatch, hopper_matmul
    m, n, k = 512, 1024, 256
    picked = dict(dispatch.choose_config(m, n, k, "float16", "h200", 132))   # tg.matmul's pick on an H200
    kernel, specs, arch = cli.job_kernel(None, (m, n, k), "float16")
    expected = hopper_matmul.build(m, n, k, dtype=tg.float16, **picked)
    assert arch == "sm_90a" and kernel.trace(*specs).fingerprint() == expected.trace(*specs).fingerprint()


def test_precompile_reports_a_bad_shape():
    with pytest.raises(SystemExit) as exit_:
        cli.main(["precompile", "--shapes", "4096x4096"])
    assert exit_.value.code == 2


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_a_gpu_tune_measures_the_best_predicted_candidates(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert cli.main(["tune", os.path.join(ROOT, "examples", "hopper_v2_tma_wgmma.py"), "--param", "tile_n=64,128",
                     "--shape", "1024", "1024", "1024", "--top-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("(measured)") and sum(" measured " in line for line in lines[2:]) == 2


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_a_gpu_tune_matmul_records_what_tg_matmul_then_runs(tmp_path, monkeypatch, capsys):
    from tilegemm.ops import dispatch, tuned
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert cli.main(["tune-matmul", "--shapes", "200x264x136", "--dtype", "bfloat16", "--weight"]) == 0
    assert capsys.readouterr().out.startswith("tg.tune_matmul 200x264x136 bfloat16 (mk/nk) on ")
    problem = tuned.Problem(200, 264, 136, "bfloat16", *dispatch._target(False), "mk", "nk")
    assert tuned.lookup(problem) == dispatch.choose_config(200, 264, 136, "bfloat16", *dispatch._target(False),
                                                           "mk", "nk")
    dispatch.forget_prepared()


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_a_gpu_tune_matmul_records_block_scaled_fp8_designs_for_torch_layouts(tmp_path, monkeypatch, capsys):
    from tilegemm.ops import blockscaling, dispatch, epilogue, tuned
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert cli.main(["tune-matmul", "--shapes", "1000x1032x1040", "--dtype", "float8_e4m3fn", "--scales",
                     "block"]) == 0
    assert capsys.readouterr().out.startswith("tg.tune_matmul 1000x1032x1040 float8_e4m3fn (mk/nk) block scales "
                                              "km/nk -> bf16 on ")
    problem = tuned.Problem(1000, 1032, 1040, "float8_e4m3fn", *dispatch._target(False), "mk", "nk",
                            "block scales km/nk -> bf16")
    bf16_out = epilogue.fused(None, {}, 1000, 1032, None, tg.bfloat16)
    recorded = tuned.lookup(problem)
    assert recorded is not None and recorded == dispatch.choose_block_scaled_config(
        1000, 1032, 1040, "float8_e4m3fn", *dispatch._target(False), blockscaling.BlockScales("km", "nk"), bf16_out)
    dispatch.forget_prepared()


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_on_a_gpu_precompile_compiles_what_tg_matmul_picks_for_that_gpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert cli.main(["precompile", "--shapes", "1024x2048x512", "--jobs", "1"]) == 0
    assert "tg.matmul 1024x2048x512 float16: compiled" in capsys.readouterr().out
    cache.memory_clear()
    kernel, specs, arch = cli.job_kernel(None, (1024, 2048, 512), "float16")
    lowered = kernel.lower(*specs, arch=arch)
    lowered.compile()
    assert lowered.cache_hit == "disk"
