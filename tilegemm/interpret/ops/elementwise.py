"""Elementwise math and broadcasting of register arrays: unary, expand_dims, broadcast_to (whole-array numpy)."""
import numpy as np

from ...lang.elementwise import UNARY
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
