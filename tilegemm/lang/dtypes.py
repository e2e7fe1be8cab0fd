"""Element types: numpy dtypes, with bfloat16 and the 8-bit floats (e4m3, e5m2) from ml_dtypes."""
import ml_dtypes
import numpy as np

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)   # 4 exponent bits, 3 mantissa bits, no infinities
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)       # 5 exponent bits, 2 mantissa bits
float32 = np.dtype(np.float32)
int32 = np.dtype(np.int32)
bool_ = np.dtype(np.bool_)

_ALIASES = {"f16": float16, "fp16": float16, "half": float16,
            "bf16": bfloat16, "bfloat16": bfloat16,
            "e4m3": float8_e4m3fn, "fp8_e4m3": float8_e4m3fn, "e5m2": float8_e5m2, "fp8_e5m2": float8_e5m2,
            "f32": float32, "fp32": float32, "float": float32,
            "i32": int32, "int": int32, "bool": bool_}

ARRAY_DTYPES = (float16, bfloat16, float8_e4m3fn, float8_e5m2, float32, int32, bool_)   # element types of the arrays kernels take


def as_dtype(x):
    """Returns the numpy dtype named or given by `x` (accepts 'bf16', np.float16, ...)."""
    if isinstance(x, str) and x in _ALIASES:
        return _ALIASES[x]
    try:
        return np.dtype(x)
    except TypeError as e:
        raise TypeError(f"{x!r} is not a dtype tilegemm knows; use float16, bfloat16, float8_e4m3fn, float8_e5m2, float32 or int32") from e


def name(dtype):
    """Short printable name of a dtype ('f16', 'bf16', 'e4m3', 'e5m2', 'f32', 'i32', 'bool')."""
    return {float16: "f16", bfloat16: "bf16", float8_e4m3fn: "e4m3", float8_e5m2: "e5m2", float32: "f32",
            int32: "i32", bool_: "bool"}.get(
        np.dtype(dtype), str(np.dtype(dtype)))


def itemsize(dtype):
    return np.dtype(dtype).itemsize
