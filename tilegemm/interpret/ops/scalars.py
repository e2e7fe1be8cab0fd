"""Scalar ops: axis_index, binop and select on int32 and bool values (C semantics for div and rem)."""
from ...errors import KernelError
from ...lang import dtypes
from ..registry import handler

_INT32_MIN, _INT32_SPAN = -2 ** 31, 2 ** 32


def _wrap(x):
    """Two's-complement int32 wrap-around, as on the GPU."""
    return (x - _INT32_MIN) % _INT32_SPAN + _INT32_MIN


def _div(a, b, op):
    """Integer division truncating toward zero (C, not Python, semantics)."""
    if b == 0:
        raise KernelError("integer division by zero at run time", loc=op.loc)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINOPS = {
    "add": lambda a, b, op: a + b,
    "sub": lambda a, b, op: a - b,
    "mul": lambda a, b, op: a * b,
    "div": _div,
    "rem": lambda a, b, op: a - b * _div(a, b, op),
    "min": lambda a, b, op: min(a, b),
    "max": lambda a, b, op: max(a, b),
    "lt": lambda a, b, op: a < b,
    "le": lambda a, b, op: a <= b,
    "gt": lambda a, b, op: a > b,
    "ge": lambda a, b, op: a >= b,
    "eq": lambda a, b, op: a == b,
    "ne": lambda a, b, op: a != b,
    "and": lambda a, b, op: a & b,
    "or": lambda a, b, op: a | b,
    "xor": lambda a, b, op: a ^ b,
}


@handler("axis_index")
def axis_index(task, op, env):
    """This task's index along a grid, cluster, thread or warp axis."""
    env[op.results[0].id] = task.axis(op.attrs["axis"], op)


@handler("binop")
def binop(task, op, env):
    """Scalar arithmetic and comparisons; int32 results wrap around."""
    a, b = task.operands(op, env)
    value = _BINOPS[op.attrs["op"]](a, b, op)
    result = op.results[0]
    env[result.id] = bool(value) if result.type.dtype == dtypes.bool_ else _wrap(int(value))


@handler("select")
def select(task, op, env):
    """`on_true if cond else on_false` on scalars."""
    cond, on_true, on_false = task.operands(op, env)
    env[op.results[0].id] = on_true if cond else on_false
