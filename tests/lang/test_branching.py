"""tg.while_loop and tg.cond record regions ending with yields; what they cannot carry is refused at the user's line."""
import pytest

import tilegemm as tg

from .helpers import raises_at, spec, trace


def test_while_loop_records_a_cond_and_a_body_region_and_cond_a_region_per_branch():
    seen = {}

    def body(x, out):
        i = tg.axis_index("x")
        seen["loop"] = tg.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] | (c[0] == 2)), (i, False))
        seen["branch"] = tg.cond(i == 0, lambda j: j + 1, lambda j: j - 1, i)
        seen["static"] = tg.cond(True, lambda: 1, lambda: 2)

    ops = list(trace(body, spec(128, 128), grid=(2,)).walk())
    (loop,) = [op for op in ops if op.kind == "while_loop"]
    (branch,) = [op for op in ops if op.kind == "cond"]
    assert [str(r.type) for r in loop.results] == ["i32", "bool"] and len(loop.regions) == 2
    assert [op.kind for op in loop.regions[0].ops][-1] == "yield" and len(loop.regions[0].args) == 2
    assert len(branch.regions) == 2 and str(branch.result.type) == "i32"
    assert seen["static"] == 1, "a Python bool picks the branch while tracing"


@pytest.mark.parametrize("body, marker, fragment", [
    (lambda x, out: tg.while_loop(lambda v: True, lambda v: v, x[...]), "array",  # @array
     "tg.while_loop carries traced scalars (ints and bools)"),
    (lambda x, out: tg.while_loop(lambda i: i, lambda i: i + 1, 0), "int_cond",  # @int_cond
     "tg.while_loop's cond_fun returned i32; expected bool"),
    (lambda x, out: tg.while_loop(lambda i: i < 3, lambda i: i < 2, 0), "changed",  # @changed
     "tg.while_loop's body_fun returned bool; expected i32"),
    (lambda x, out: tg.cond(tg.axis_index("x") == 0, lambda: 1, lambda: True), "branches",  # @branches
     "tg.cond's false_fun returned bool; expected i32"),
    (lambda x, out: tg.cond(tg.axis_index("x"), lambda: 1, lambda: 2), "pred",  # @pred
     "tg.cond needs a bool predicate"),
    (lambda x, out: tg.cond(tg.axis_index("x") == 0, lambda: x[...], lambda: x[...]), "cond_array",  # @cond_array
     "tg.cond's true_fun carries traced scalars"),
])
def test_what_while_loop_and_cond_cannot_carry_is_refused_at_the_users_line(body, marker, fragment):
    with raises_at(marker, fragment):
        trace(body, spec(128, 128), grid=(2,))
