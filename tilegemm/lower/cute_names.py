"""Spelling tilegemm types and literals in generated CuTe DSL source."""
import numpy as np

from ..lang import dtypes

_CUTLASS_TYPES = {
    dtypes.float16: "cutlass.Float16",
    dtypes.bfloat16: "cutlass.BFloat16",
    dtypes.float8_e4m3fn: "cutlass.Float8E4M3FN",
    dtypes.float8_e5m2: "cutlass.Float8E5M2",
    dtypes.float32: "cutlass.Float32",
    dtypes.int32: "cutlass.Int32",
    dtypes.bool_: "cutlass.Boolean",
}


def cutlass_type(dtype):
    """'cutlass.Float16' for float16, and so on."""
    return _CUTLASS_TYPES[np.dtype(dtype)]


def literal(x):
    """A Python literal as source text (ints, bools, floats; inf and nan spelled portably)."""
    if isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if x != x:
        return 'float("nan")'
    if x in (float("inf"), float("-inf")):
        return f'float("{x}")'
    return repr(x)


def shape(t):
    """A static shape tuple as source text: (64, 128) or (64,)."""
    t = tuple(t)
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def row_major_order(rank):
    """The `order` argument of cute.make_ordered_layout for a row-major (last dim fastest) layout."""
    return tuple(range(rank - 1, -1, -1))
