"""tilegemm's pytest plugin, registered when tilegemm is installed (entry point pytest11).

- `@pytest.mark.gpu`: the test needs a Hopper or Blackwell GPU; skipped where none is present or with
  --tg-interpret-only.
- `tg_device` fixture: the GPU kernels run on (a tilegemm.runtime.Device); skips the test as the marker does.
- `--tg-interpret-only`: run kernels in the numpy interpreter only (tilegemm.testing.check drops its GPU mode).
- `--tg-seeds N`: tilegemm.testing.check interprets each case under N shuffled schedules besides the
  deterministic one (default 2).
"""
import pytest

from . import defaults, gpu

_previous = pytest.StashKey()   # the Defaults in force before this session configured them


def pytest_addoption(parser):
    group = parser.getgroup("tilegemm")
    group.addoption("--tg-interpret-only", action="store_true",
                    help="run tilegemm kernels in the numpy interpreter only: skip tests marked gpu and the GPU "
                         "mode of tilegemm.testing.check")
    group.addoption("--tg-seeds", type=int, default=None, metavar="N",
                    help="tilegemm.testing.check interprets each case under N shuffled schedules besides the "
                         f"deterministic one (default {defaults.Defaults.shuffled_schedules})")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a Hopper or Blackwell GPU; skipped where none is present or "
                                       "with --tg-interpret-only")
    seeds = config.getoption("tg_seeds")
    if seeds is not None and seeds < 0:
        raise pytest.UsageError(f"--tg-seeds takes a count of shuffled schedules >= 0, got {seeds}")
    config.stash[_previous] = defaults.configure(shuffled_schedules=seeds,
                                                 interpret_only=config.getoption("tg_interpret_only") or None)


def pytest_unconfigure(config):
    if _previous in config.stash:
        defaults.restore(config.stash[_previous])


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is not None:
        _skip_without_gpu()


@pytest.fixture
def tg_device():
    """The GPU tilegemm kernels run on; the test is skipped where there is no Hopper or Blackwell GPU."""
    _skip_without_gpu()
    from ..runtime import current_device
    return current_device()


def _skip_without_gpu():
    """Skips the running test unless kernels may run on a GPU here."""
    if defaults.current().interpret_only:
        pytest.skip("--tg-interpret-only")
    reason = gpu.unavailable_reason()
    if reason is not None:
        pytest.skip(f"needs a Hopper or Blackwell GPU: {reason}")
