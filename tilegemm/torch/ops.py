"""torch.ops.tilegemm.matmul: tg.matmul as a torch custom operator, with a fake implementation and autograd.

c = a @ b for float16/bfloat16 a [M, K] and b [K, N], accumulated in float32.
CUDA tensors launch tg.matmul's kernel on torch's current stream (zero-copy);
CPU tensors run it in the numpy interpreter. The fake implementation gives
torch.compile c's shape and dtype, and tg.matmul's argument errors, without
running anything. The backward pass is two more calls of this operator,
grad_a = grad_c @ b.T and grad_b = a.T @ grad_c. `batch_invariant=True` is
tg.matmul's: each row of c has the same bits whatever the batch it came in.
"""
import types

import torch
import torch.nn.functional as F

from ..ops import dispatch
from .host import from_numpy, numpy_dtype, row_major, to_numpy


@torch.library.custom_op("tilegemm::matmul", mutates_args=(), device_types="cuda")
def matmul(a: torch.Tensor, b: torch.Tensor, batch_invariant: bool = False) -> torch.Tensor:
    """c = a @ b for float16/bfloat16 a [M, K], b [K, N] with tilegemm's matmul (see tilegemm.torch.ops)."""
    return dispatch.matmul(*_operands(a, b), batch_invariant=batch_invariant)


@matmul.register_kernel("cpu")
def _interpret(a, b, batch_invariant=False):
    _check(a, b)   # before numpy reads them: numpy has no view of some torch dtypes
    return from_numpy(dispatch.matmul(*map(to_numpy, _operands(a, b)), interpret=True,
                                      batch_invariant=batch_invariant))


@matmul.register_fake
def _fake(a, b, batch_invariant=False):
    _check(a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _check(a, b):
    """tg.matmul's operand checks (a tg.ArgumentError saying what it takes), on the tensors' shapes, dtypes and
    strides."""
    sa, sb = _spec(a), _spec(b)
    dispatch.check_operands(sa, sb)
    dispatch.operand_layouts(sa, sb, _stored_strides(a), _stored_strides(b))


def _operands(a, b):
    """a and b in layouts tg.matmul reads: as given when row-major or the transpose of a row-major tensor (a
    weight's w.T, the backward's a.T and b.T: no copy), else a row-major copy."""
    return _stored(a), _stored(b)


def _stored(x):
    return x if _read_as_stored(x) else row_major(x)


def _stored_strides(x):
    """The strides of _stored(x), without copying."""
    return x.stride() if _read_as_stored(x) else (x.shape[1], 1)


def _read_as_stored(x):
    return x.is_contiguous() or x.T.is_contiguous()


def _spec(x):
    """What tg.matmul's operand check reads (.shape, .dtype), keeping torch.compile's symbolic sizes symbolic (a
    tg.ShapeDtype would make them ints: one compile per shape)."""
    return types.SimpleNamespace(shape=tuple(x.shape), dtype=numpy_dtype(x.dtype))


def _setup_context(ctx, inputs, output):
    a, b, *flags = inputs
    ctx.save_for_backward(a, b)
    ctx.batch_invariant = bool(flags and flags[0])


def _backward(ctx, grad_c):
    """grad_a = grad_c @ b.T and grad_b = a.T @ grad_c, each through this operator (batch-invariant if the forward
    was)."""
    a, b = ctx.saved_tensors
    grad_a = matmul(grad_c, b.T, ctx.batch_invariant) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.T, grad_c, ctx.batch_invariant) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b, None


matmul.register_autograd(_backward, setup_context=_setup_context)
