"""tilegemm.testing: test your kernels against numpy (guide: docs/testing.md).

    import tilegemm.testing as tt

    tt.check(build, lambda a, b: a @ b, shapes=[(200, 136, 72)])   # interpreter (several schedules), GPU if any
    tt.assert_close(c, a64 @ b64, k=72)                            # one result, under the tolerance rule

`tolerance` is the rule every comparison uses.
"""
from .checker import Case, CheckFailure, Run, check, random_inputs
from .compare import Comparison, Element, assert_close, compare
from .defaults import configure
from .tolerance import tolerance, unit_roundoff

__all__ = ["Case", "CheckFailure", "Comparison", "Element", "Run", "assert_close", "check", "compare", "configure",
           "random_inputs", "tolerance", "unit_roundoff"]
