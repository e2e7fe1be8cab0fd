"""tilegemm.testing: test your kernels against numpy, under pytest and hypothesis (guide: docs/testing.md).

    import tilegemm.testing as tt

    tt.check(build, lambda a, b: a @ b, shapes=[(200, 136, 72)])   # interpreter (several schedules), GPU if any
    tt.assert_close(c, a64 @ b64, k=72)                            # one result, under the tolerance rule
    @given(shape=tt.shapes(tile=(64, 128, 64)), dtype=tt.dtypes())  # hypothesis strategies

`tolerance` is the rule every comparison uses. Installing tilegemm registers a
pytest plugin (tilegemm.testing.plugin): the `gpu` marker, the `tg_device`
fixture, --tg-interpret-only and --tg-seeds N.
"""
from .checker import Case, CheckFailure, Run, check, random_inputs
from .compare import Comparison, Element, assert_close, compare
from .defaults import configure
from .operands import stored_operands
from .tolerance import tolerance, unit_roundoff

__all__ = ["Case", "CheckFailure", "Comparison", "Element", "Run", "assert_close", "check", "compare", "configure",
           "dtypes", "layouts", "random_inputs", "shapes", "stored_operands", "tolerance", "unit_roundoff"]

_STRATEGIES = ("shapes", "dtypes", "layouts")


def __getattr__(name):
    """The hypothesis strategies, imported on first use: only they need hypothesis (a test extra)."""
    if name in _STRATEGIES:
        from . import strategies
        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
