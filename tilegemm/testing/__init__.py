"""tilegemm.testing: test your kernels against numpy (guide: docs/testing.md).

    import tilegemm.testing as tt

    tt.assert_close(c, a64 @ b64, k=72)          # one result, under the tolerance rule

`tolerance` is the rule every comparison uses.
"""
from ..showcase import random_inputs
from .compare import Comparison, Element, assert_close, compare
from .tolerance import tolerance, unit_roundoff

__all__ = ["Comparison", "Element", "assert_close", "compare", "random_inputs", "tolerance", "unit_roundoff"]
