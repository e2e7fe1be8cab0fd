"""tg.matmul's scales (as torch._scaled_mm takes them): which kind each is, and the [1, 1], [M, 1] or [1, N]
arrays the flagship kernel reads them as (tilegemm.ops.hopper_matmul.scale_specs)."""
import numpy as np

from ..errors import ArgumentError
from ..lang import dtypes
from ..runtime.arrays import shape_and_dtype
from .hopper_matmul import default_out_dtype

OUT_DTYPES = (dtypes.bfloat16, dtypes.float16, dtypes.float32)
_PER_TENSOR = ((), (1,), (1, 1))


def kinds(scales, m, n):
    """The builder's `scales` ((kind of scale_a, kind of scale_b), each "tensor" or "row") for the scales given
    (none, or both), or an ArgumentError saying what tg.matmul takes."""
    if not scales:
        return None
    if any(s is None for s in scales):
        raise ArgumentError("tg.matmul takes scale_a= and scale_b= together (pass 1.0 as a float32 array for an "
                            "operand without a scale)")
    found = []
    for name, scale, per_row in (("scale_a", scales[0], (m, 1)), ("scale_b", scales[1], (1, n))):
        shape, dtype = shape_and_dtype(scale, f"tg.matmul's argument {name}")
        if dtype != dtypes.float32:
            raise ArgumentError(f"tg.matmul's {name} is {dtypes.name(dtype) if isinstance(dtype, np.dtype) else dtype}; "
                                "scales are float32")
        if tuple(shape) in _PER_TENSOR:
            found.append("tensor")
        elif tuple(shape) == per_row:
            found.append("row")
        else:
            what = "row of a" if name == "scale_a" else "column of b"
            raise ArgumentError(f"tg.matmul's {name} has shape {tuple(shape)}; a scale is one value for the tensor "
                                f"(shape (), (1,) or (1, 1)) or one per {what} {per_row}")
    return tuple(found)


def out_dtype(requested, inputs_dtype):
    """The numpy dtype of c: `requested` (a dtype, its name, or a torch dtype) or the inputs' default."""
    if requested is None:
        return default_out_dtype(inputs_dtype)
    named = requested if isinstance(requested, (np.dtype, type)) else str(requested).replace("torch.", "")
    try:
        dtype = dtypes.as_dtype(named)
    except TypeError:
        dtype = None
    if dtype not in OUT_DTYPES:
        raise ArgumentError(f"tg.matmul's out_dtype= is bfloat16, float16 or float32, got {requested!r}")
    return dtype


def as_stored(scales):
    """The scales as the kernel takes them: per-tensor ones as [1, 1] views of the same memory."""
    return tuple(s.reshape(1, 1) if tuple(s.shape) in _PER_TENSOR else s for s in scales)
