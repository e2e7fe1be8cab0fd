"""tg.matmul's scales (as torch._scaled_mm takes them), run as a fused epilogue (tilegemm.ops.epilogue): the
[1, 1], [M, 1] or [1, N] float32 arrays the kernel reads them as, and the function multiplying them in."""
import numpy as np

from ..errors import ArgumentError
from ..lang import dtypes
from ..lang.trace import ShapeDtype
from ..runtime.arrays import shape_and_dtype

_PER_TENSOR = ((), (1,), (1, 1))


def scaled(acc, scale_a, scale_b):
    """The epilogue of a scaled call: the f32 accumulator tile times A's and B's scales (tiles broadcasting)."""
    return acc * scale_a * scale_b


def specs(kinds, m, n):
    """The specs {"scale_a": ..., "scale_b": ...} the kernel takes for scales of `kinds` (each "tensor" or "row")
    on an [m, n] result, as `tensors` stores them: [1, 1], or [m, 1] / [1, n]."""
    rows = {"scale_a": (m, 1), "scale_b": (1, n)}
    return {name: ShapeDtype(rows[name] if kind == "row" else (1, 1), dtypes.float32)
            for name, kind in zip(rows, kinds)}


def tensors(scales, m, n):
    """The epilogue tensors {"scale_a": ..., "scale_b": ...} of the scales given (both) for an [m, n] result, a
    per-tensor scale as a [1, 1] view of the same memory; or an ArgumentError saying what tg.matmul takes."""
    if any(s is None for s in scales):
        raise ArgumentError("tg.matmul takes scale_a= and scale_b= together (pass 1.0 as a float32 array for an "
                            "operand without a scale)")
    found = {}
    for name, scale, per_row in (("scale_a", scales[0], (m, 1)), ("scale_b", scales[1], (1, n))):
        shape, dtype = shape_and_dtype(scale, f"tg.matmul's argument {name}")
        if dtype != dtypes.float32:
            raise ArgumentError(f"tg.matmul's {name} is {dtypes.name(dtype) if isinstance(dtype, np.dtype) else dtype}; "
                                "scales are float32")
        if tuple(shape) in _PER_TENSOR:
            found[name] = scale.reshape(1, 1)
        elif tuple(shape) == per_row:
            found[name] = scale
        else:
            what = "row of a" if name == "scale_a" else "column of b"
            raise ArgumentError(f"tg.matmul's {name} has shape {tuple(shape)}; a scale is one value for the tensor "
                                f"(shape (), (1,) or (1, 1)) or one per {what} {per_row}")
    return found
