"""Elementwise math and broadcasting on register arrays (the `jnp` surface a Pallas epilogue uses).

`tg.exp(x)`, `tg.tanh(x)`, ... record a `unary` op; `x ** y` records an `ewise`
pow; `x[None, :]` records `expand_dims` (a size-1 dimension) and `tg.broadcast_to`
a `broadcast_to`; `x.T` / `x.transpose(axes)` a `transpose` and `x.reshape(shape)` a
`reshape`; `x.sum(axis)`, `x.max(axis)` and `x.min(axis)` (and np.sum, np.max,
np.min of an array) record a `reduce`. numpy ufuncs applied to a register array (`np.exp(x)`) record
the same ops, so an epilogue written against numpy traces unchanged. Math runs on
float32 arrays, as the accumulator is; convert narrower arrays with `.astype`.
"""
import math

import numpy as np

from ..errors import KernelError
from . import dtypes
from .ir import current_user_loc
from .tracer import emit
from .types import ArrayType
from .values import Array, _ewise, maximum, minimum

# The unary functions: name -> what numpy computes for a Python number (and the interpreter for arrays).
UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt, "abs": np.abs,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
}


def unary(fn, x, loc=None):
    """Records `fn(x)` for a register array `x` (a Python number is computed at once)."""
    loc = loc or current_user_loc()
    if isinstance(x, (int, float, np.number)) and not isinstance(x, bool):
        return float(UNARY[fn](float(x)))
    if not isinstance(x, Array):
        raise KernelError(f"tg.{fn} takes a register array (or a Python number), got {type(x).__name__}; "
                          "traced scalars are int32 indices", loc=loc)
    if x.dtype != dtypes.float32:
        raise KernelError(f"tg.{fn} computes on float32 arrays; this array is {dtypes.name(x.dtype)}: convert it "
                          "with .astype(tg.float32) first", loc=loc)
    return emit("unary", (x,), {"fn": fn}, (ArrayType(x.shape, x.dtype),), loc=loc).result


def _unary_function(fn, doc):
    def f(x):
        return unary(fn, x)
    f.__name__, f.__qualname__, f.__doc__ = fn, fn, doc
    return f


exp = _unary_function("exp", "e ** x, elementwise (`jnp.exp`).")
exp2 = _unary_function("exp2", "2 ** x, elementwise (`jnp.exp2`).")
log = _unary_function("log", "The natural logarithm, elementwise (`jnp.log`).")
tanh = _unary_function("tanh", "The hyperbolic tangent, elementwise (`jnp.tanh`).")
erf = _unary_function("erf", "The error function, elementwise (`jax.lax.erf`); exact GELU is "
                              "`0.5 * x * (1 + tg.erf(x / sqrt(2)))`.")
sqrt = _unary_function("sqrt", "The square root, elementwise (`jnp.sqrt`).")
rsqrt = _unary_function("rsqrt", "1 / sqrt(x), elementwise (`jax.lax.rsqrt`).")
sigmoid = _unary_function("sigmoid", "1 / (1 + exp(-x)), elementwise (`jax.nn.sigmoid`); SiLU is `x * tg.sigmoid(x)`.")
absolute = _unary_function("abs", "|x|, elementwise (`jnp.abs`, Python's `abs(x)`).")


def power(x, y):
    """x ** y, elementwise (`jnp.power`); x ** 2 and x ** 3 are multiplications."""
    return _ewise("pow", x, y)


def expand_dims(x, axes, loc):
    """`x` with size-1 dimensions inserted at the result positions `axes` (`x[None, :]`)."""
    shape = list(x.shape)
    for axis in sorted(axes):
        shape.insert(axis, 1)
    return emit("expand_dims", (x,), {"axes": tuple(sorted(axes))}, (ArrayType(tuple(shape), x.dtype),),
                loc=loc).result


def broadcast_to(x, shape):
    """`x` repeated along its size-1 (or missing leading) dimensions to `shape` (`jnp.broadcast_to`)."""
    loc = current_user_loc()
    if not isinstance(x, Array):
        raise KernelError(f"tg.broadcast_to takes a register array, got {type(x).__name__}", loc=loc)
    shape = tuple(int(d) for d in shape)
    padded = (1,) * (len(shape) - x.ndim) + tuple(x.shape)
    if len(padded) != len(shape) or any(s != t and s != 1 for s, t in zip(padded, shape)):
        raise KernelError(f"an array of shape {tuple(x.shape)} does not broadcast to {shape}: each dimension "
                          "must equal the target's or be 1 (numpy broadcasting, trailing dimensions aligned)", loc=loc)
    if shape == tuple(x.shape):
        return x
    return emit("broadcast_to", (x,), {"shape": shape}, (ArrayType(shape, x.dtype),), loc=loc).result


def transpose(x, axes):
    """`x` with its dimensions permuted: dimension i of the result is dimension axes[i] of x (numpy's)."""
    loc = current_user_loc()
    axes = tuple(reversed(range(x.ndim))) if axes in ((), (None,), None) else tuple(axes)
    if sorted(a % x.ndim if isinstance(a, int) else a for a in axes) != list(range(x.ndim)):
        raise KernelError(f"transpose axes {axes!r} are not a permutation of the {x.ndim} dimensions of an array of "
                          f"shape {tuple(x.shape)}", loc=loc)
    axes = tuple(a % x.ndim for a in axes)
    if axes == tuple(range(x.ndim)):
        return x
    shape = tuple(x.shape[a] for a in axes)
    return emit("transpose", (x,), {"axes": axes}, (ArrayType(shape, x.dtype),), loc=loc).result


def reshape(x, shape):
    """`x` with the same elements in row-major order and a new `shape` (one dimension may be -1: inferred)."""
    loc = current_user_loc()
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    size = int(np.prod(x.shape))
    known = int(np.prod([d for d in shape if d != -1]))
    if not all(isinstance(d, int) and (d > 0 or d == -1) for d in shape) or list(shape).count(-1) > 1 or \
            (-1 in shape and (known == 0 or size % known)) or (-1 not in shape and known != size):
        raise KernelError(f"cannot reshape an array of shape {tuple(x.shape)} ({size} elements) into {shape}", loc=loc)
    shape = tuple(size // known if d == -1 else d for d in shape)
    if shape == tuple(x.shape):
        return x
    return emit("reshape", (x,), {"shape": shape}, (ArrayType(shape, x.dtype),), loc=loc).result


REDUCTIONS = {"sum": np.add, "max": np.maximum, "min": np.minimum}   # reduce kind -> the numpy ufunc it reduces with


def reduce(kind, x, axis, keepdims, unsupported_arguments):
    """Records the `kind` reduction ('sum', 'max', 'min') of float32 array `x` along `axis` (None: all of them)."""
    loc = current_user_loc()
    given = [name for name, value in unsupported_arguments.items() if value is not None]
    if given:
        raise KernelError(f"{kind} of a register array takes axis= and keepdims=, not {', '.join(given)}=", loc=loc)
    if x.dtype != dtypes.float32:
        raise KernelError(f"{kind} reduces float32 arrays; this array is {dtypes.name(x.dtype)}: convert it with "
                          ".astype(tg.float32) first", loc=loc)
    axes = tuple(range(x.ndim)) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    if not all(isinstance(a, int) and -x.ndim <= a < x.ndim for a in axes):
        raise KernelError(f"{kind} axis {axis!r} is not an axis of an array of shape {tuple(x.shape)}", loc=loc)
    axes = tuple(sorted({a % x.ndim for a in axes}))
    shape = tuple(1 if d in axes else size for d, size in enumerate(x.shape) if keepdims or d not in axes)
    return emit("reduce", (x,), {"kind": kind, "axes": axes, "keepdims": bool(keepdims)},
                (ArrayType(shape, x.dtype),), loc=loc).result


# numpy ufuncs applied to register arrays: the tilegemm function they stand for.
_UFUNCS = {
    np.exp: exp, np.exp2: exp2, np.log: log, np.tanh: tanh, np.sqrt: sqrt, np.absolute: absolute,
    np.add: lambda a, b: a + b, np.subtract: lambda a, b: a - b, np.multiply: lambda a, b: a * b,
    np.true_divide: lambda a, b: a / b, np.negative: lambda a: -a, np.power: power,
    np.maximum: maximum, np.minimum: minimum,
    np.less: lambda a, b: a < b, np.less_equal: lambda a, b: a <= b, np.greater: lambda a, b: a > b,
    np.greater_equal: lambda a, b: a >= b,
}


def apply_ufunc(ufunc, method, inputs, kwargs):
    """What `ufunc(*inputs)` means when an input is a register array, or a KernelError naming the tg function."""
    loc = current_user_loc()
    fn = _UFUNCS.get(ufunc)
    if method != "__call__" or kwargs or fn is None:
        supported = ", ".join(sorted(u.__name__ for u in _UFUNCS))
        raise KernelError(f"numpy's {ufunc.__name__} cannot run on a traced register array (its values exist only "
                          f"when the kernel runs); numpy ufuncs that trace: {supported}; the tilegemm functions: "
                          "tg.exp, tg.exp2, tg.log, tg.tanh, tg.erf, tg.sqrt, tg.rsqrt, tg.sigmoid, abs(x), x ** y, "
                          "tg.maximum, tg.minimum, tg.where", loc=loc)
    numbers = []
    for x in inputs:   # numpy scalars become Python numbers: `np.float32(2) * x` would come back here through numpy
        if isinstance(x, (np.generic, np.ndarray)):
            if np.ndim(x):
                raise KernelError(f"numpy's {ufunc.__name__} got a host numpy array of shape {np.shape(x)} and a "
                                  "traced register array; kernels read host data through their inputs (load a "
                                  "ref with ref[...])", loc=loc)
            x = x.item()
        numbers.append(x)
    return fn(*numbers)
