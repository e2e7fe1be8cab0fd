"""Register-array ops of a warpgroup: full, astype, ewise, where, array_slice (whole-array numpy)."""
import numpy as np

from ..registry import handler

_EWISE = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "min": np.minimum, "max": np.maximum, "pow": np.power,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}


def _typed(value, result):
    """`value` as the dtype and shape the op's result type declares."""
    t = result.type
    return np.broadcast_to(np.asarray(value).astype(t.dtype, copy=False), t.shape)


@handler("full")
def full(task, op, env):
    """A constant register array."""
    env[op.results[0].id] = np.full(op.attrs["shape"], op.attrs["value"], op.attrs["dtype"])


@handler("astype")
def astype(task, op, env):
    """Element conversion; float narrowing rounds to nearest even (numpy, ml_dtypes)."""
    (x,) = task.operands(op, env)
    env[op.results[0].id] = x.astype(op.attrs["dtype"])


@handler("ewise")
def ewise(task, op, env):
    """Elementwise arithmetic or comparison with numpy broadcasting."""
    a, b = task.operands(op, env)
    env[op.results[0].id] = _typed(_EWISE[op.attrs["op"]](a, b), op.results[0])


@handler("where")
def where(task, op, env):
    """Elementwise select."""
    cond, on_true, on_false = task.operands(op, env)
    env[op.results[0].id] = _typed(np.where(cond, on_true, on_false), op.results[0])


@handler("array_slice")
def array_slice(task, op, env):
    """A static sub-array."""
    (x,) = task.operands(op, env)
    index = tuple(slice(s, s + n) for s, n in zip(op.attrs["starts"], op.attrs["sizes"]))
    env[op.results[0].id] = x[index]
