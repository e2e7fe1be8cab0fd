"""Elementwise math, broadcasting, reshaping and reductions of register arrays: unary, expand_dims, broadcast_to,
transpose, reshape, reduce (whole-array numpy)."""
import numpy as np

from ...lang.elementwise import REDUCTIONS, UNARY
from ..registry import handler


@handler("unary")
def unary(task, op, env):
    """exp, tanh, erf, ... computed in float64 and rounded to the result's float32."""
    (x,) = task.operands(op, env)
    with np.errstate(all="ignore"):   # exp overflow and log(0) give inf, as the GPU's do
        env[op.results[0].id] = UNARY[op.attrs["fn"]](x.astype(np.float64)).astype(op.results[0].type.dtype)


@handler("expand_dims")
def expand_dims(task, op, env):
    """Size-1 dimensions inserted (`x[None, :]`)."""
    (x,) = task.operands(op, env)
    env[op.results[0].id] = np.expand_dims(x, op.attrs["axes"])


@handler("broadcast_to")
def broadcast_to(task, op, env):
    """The array repeated along its size-1 dimensions."""
    (x,) = task.operands(op, env)
    env[op.results[0].id] = np.broadcast_to(x, op.attrs["shape"]).copy()


@handler("reduce")
def reduce(task, op, env):
    """A sum, maximum or minimum along the op's axes, in float32."""
    (x,) = task.operands(op, env)
    ufunc = REDUCTIONS[op.attrs["kind"]]
    env[op.results[0].id] = ufunc.reduce(x, axis=op.attrs["axes"], keepdims=op.attrs["keepdims"]).astype(
        op.results[0].type.dtype)


@handler("transpose")
def transpose(task, op, env):
    """The dimensions permuted."""
    (x,) = task.operands(op, env)
    env[op.results[0].id] = np.transpose(x, op.attrs["axes"]).copy()


@handler("reshape")
def reshape(task, op, env):
    """The elements in row-major order, in the new shape."""
    (x,) = task.operands(op, env)
    env[op.results[0].id] = np.reshape(x, op.attrs["shape"]).copy()
