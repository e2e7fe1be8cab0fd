"""tg.debug_print records one op with its format and scalars; what it cannot print is refused at the user's line."""
import pytest

import tilegemm as tg

from .helpers import F32, raises_at, spec, trace


def test_debug_print_records_the_format_and_its_scalar_operands():
    def body(x, out):
        i = tg.axis_index("x")
        tg.debug_print("i={} twice={} k={}", i, i * 2, 3)

    (op,) = [op for op in trace(body, spec(128, 128), grid=(2,)).walk() if op.kind == "debug_print"]
    assert op.attrs == {"fmt": "i={} twice={} k={}"} and op.operands[2] == 3


@pytest.mark.parametrize("body, marker, fragment", [
    (lambda x, out: tg.debug_print("{} {}", 1), "count",  # @count
     "format '{} {}' has 2 placeholder(s) for 1 argument(s)"),
    (lambda x, out: tg.debug_print("{x}", 1), "named", "plain {} placeholders"),  # @named
    (lambda x, out: tg.debug_print("{:5d}", 1), "spec", "plain {} placeholders"),  # @spec
    (lambda x, out: tg.debug_print("{", 1), "unbalanced", "plain {} placeholders"),  # @unbalanced
    (lambda x, out: tg.debug_print("{}", x[...].astype(F32)), "array",  # @array
     "prints traced scalars and Python numbers, not register arrays"),
    (lambda x, out: tg.debug_print("{}", x), "ref", "cannot print a Ref"),  # @ref
    (lambda x, out: tg.debug_print(3), "fmt", "takes a format string first, got int"),  # @fmt
])
def test_what_debug_print_cannot_print_is_refused_at_the_users_line(body, marker, fragment):
    with raises_at(marker, fragment):
        trace(body, spec(128, 128))
