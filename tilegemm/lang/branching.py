"""`tg.while_loop` and `tg.cond` (jax.lax.while_loop / jax.lax.cond): loops and branches on run-time scalars.

Both carry traced scalars (ints and bools, or nested tuples/lists of them), record
their functions once into regions that end with a `yield`, and return the traced
results. The regions may hold any kernel work (copies, MMAs, barrier operations);
array state lives in refs (an ACC, SMEM), as in a pipeline body.
"""
from ..errors import KernelError
from . import dtypes
from .control import _carry_type, _flatten
from .ir import current_user_loc
from .tracer import emit, region
from .types import ScalarType
from .values import Scalar


def _scalar_types(leaves, what, loc):
    """The ScalarTypes of `leaves`; register arrays are refused (they live in refs across a loop or branch)."""
    types = [_carry_type(x, loc) for x in leaves]
    if any(not isinstance(t, ScalarType) for t in types):
        raise KernelError(f"{what} carries traced scalars (ints and bools); keep register arrays in refs (e.g. an "
                          "ACC) across it, or use tg.fori_loop, which carries arrays", loc=loc)
    return types


def _record(fn, args_types, expect, what, loc):
    """Records fn(*region args) into a new region ending with a yield of its results (of types `expect`; None:
    any scalars); returns the region, how to rebuild fn's result structure from the op's results, and their
    types."""
    with region(args_types) as r:
        leaves, unflatten = _flatten(fn(*r.args))
        got = _scalar_types(leaves, what, loc)
        if expect is not None and got != expect:
            raise KernelError(f"{what} returned {', '.join(map(str, got)) or 'nothing'}; expected "
                              f"{', '.join(map(str, expect)) or 'nothing'}", loc=loc)
        emit("yield", tuple(leaves), {}, (), loc=loc)
    return r, unflatten, got


def while_loop(cond_fun, body_fun, init_val):
    """`val = init_val; while cond_fun(val): val = body_fun(val)`; returns the final val (traced scalars)."""
    loc = current_user_loc()
    leaves, unflatten = _flatten(init_val)
    types = _scalar_types(leaves, "tg.while_loop", loc)
    cond_region, _, _ = _record(lambda *args: cond_fun(unflatten(list(args))), types, [ScalarType(dtypes.bool_)],
                                "tg.while_loop's cond_fun", loc)
    body_region, _, _ = _record(lambda *args: body_fun(unflatten(list(args))), types, types,
                                "tg.while_loop's body_fun", loc)
    op = emit("while_loop", tuple(leaves), {}, types, (cond_region, body_region), loc=loc)
    return unflatten(list(op.results))


def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands) if pred else false_fun(*operands)` with a traced bool `pred`: only one branch runs.

    Both return the same structure of traced scalars (or None). A Python bool picks the branch while tracing.
    """
    loc = current_user_loc()
    if not isinstance(pred, Scalar):
        return true_fun(*operands) if pred else false_fun(*operands)
    if pred.type.dtype != dtypes.bool_:
        raise KernelError("tg.cond needs a bool predicate (compare with ==, <, ...)", loc=loc)
    leaves, unflatten_operands = _flatten(list(operands))
    types = _scalar_types(leaves, "tg.cond", loc)
    true_region, unflatten, result_types = _record(lambda *args: true_fun(*unflatten_operands(list(args))), types,
                                                   None, "tg.cond's true_fun", loc)
    false_region, _, _ = _record(lambda *args: false_fun(*unflatten_operands(list(args))), types, result_types,
                                 "tg.cond's false_fun", loc)
    op = emit("cond", (pred, *leaves), {}, result_types, (true_region, false_region), loc=loc)
    return unflatten(list(op.results))
