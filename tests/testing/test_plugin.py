"""tilegemm's pytest plugin: the `gpu` marker and `tg_device` fixture skip where kernels cannot run on a GPU,
--tg-interpret-only and --tg-seeds N set what check runs, and installing tilegemm registers the plugin."""
import pytest

import tilegemm.testing as tt

from .fresh_process import ROOT, run_pytest

USER_TESTS = '''
import pytest

from tilegemm.testing import defaults


@pytest.mark.gpu
def test_marked_gpu():
    pass


def test_with_the_device(tg_device):
    assert tg_device.arch in ("sm_90a", "sm_100a")


def test_what_check_will_run():
    print("CHECK RUNS", defaults.current().schedule_seeds(), defaults.current().interpret_only)
'''


@pytest.fixture
def user_tests(tmp_path):
    path = tmp_path / "test_user.py"
    path.write_text(USER_TESTS)
    return path


def test_by_default_check_runs_three_schedules_and_gpu_tests_run_only_where_a_gpu_is(user_tests):
    code, output = run_pytest(user_tests, "-s", cwd=user_tests.parent)
    assert code == 0 and "CHECK RUNS (None, 1, 2) False" in output
    reason = tt.gpu.unavailable_reason()
    if reason is None:
        assert "3 passed" in output
    else:
        assert output.count(f"needs a Hopper or Blackwell GPU: {reason}") == 2 and "1 passed, 2 skipped" in output


def test_interpret_only_skips_gpu_tests_and_tg_seeds_sets_the_shuffled_schedules(user_tests):
    code, output = run_pytest(user_tests, "-s", "--tg-interpret-only", "--tg-seeds", "4", cwd=user_tests.parent)
    assert code == 0 and "CHECK RUNS (None, 1, 2, 3, 4) True" in output
    assert output.count("--tg-interpret-only") == 2 and "1 passed, 2 skipped" in output


def test_a_negative_seed_count_is_a_usage_error(user_tests):
    code, output = run_pytest(user_tests, "--tg-seeds", "-1", cwd=user_tests.parent)
    assert code == pytest.ExitCode.USAGE_ERROR and "--tg-seeds takes a count of shuffled schedules >= 0" in output


def test_installing_tilegemm_registers_the_plugin_under_its_module_name():
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+
    with open(f"{ROOT}/pyproject.toml", "rb") as f:
        entry_points = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    assert entry_points == {"tilegemm.testing.plugin": "tilegemm.testing.plugin"}   # so -p with it loads it once
