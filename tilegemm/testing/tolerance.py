"""The tolerance rule of tilegemm.testing, from rounding error analysis (derived in docs/testing.md, "Tolerance").

A kernel multiplies f16/bf16 inputs, accumulates K products in `acc_dtype` and
rounds the result to its output `dtype`. Against the float64 result of the
reference on the same inputs, element by element:

    |got - expected| <= u_out * |expected| + LAMBDA * u_acc * K * rms(expected) + tiny_out

u_out, u_acc: unit roundoffs of the output and accumulator dtypes; rms: over the
finite elements of `expected`; tiny_out: half the output dtype's smallest
subnormal (rounding below its normal range).
"""
import ml_dtypes
import numpy as np

from ..lang import dtypes

# Rounding errors of a K-term sum stay within LAMBDA * sqrt(K) * u of the sum of the terms' magnitudes, except
# with a probability below 2 exp(-LAMBDA^2 / 2) per element (Higham and Mary, 2019); 8 also covers tensor-core
# adders that truncate instead of rounding to nearest.
LAMBDA = 8


def unit_roundoff(dtype):
    """Half the distance from 1 to the next number of `dtype`: 2^-11 for f16, 2^-8 for bf16, 2^-24 for f32."""
    return float(ml_dtypes.finfo(dtypes.as_dtype(dtype)).eps) / 2


def tolerance(expected, *, k, dtype, acc_dtype=dtypes.float32):
    """Per element of `expected` (float64, same shape), how far a correct result rounded to `dtype` may be from it
    after accumulating `k` products in `acc_dtype`; the rule of this module's docstring. Where `expected` is NaN
    or infinite, only that same value is close: the tolerance there is the rule's with |expected| taken as 0."""
    expected = np.asarray(expected, dtype=np.float64)
    magnitude = np.where(np.isfinite(expected), np.abs(expected), 0.0)   # NaN and infinities must match exactly
    rms = float(np.sqrt(np.mean(np.square(magnitude[np.isfinite(expected)])))) if np.isfinite(expected).any() else 0.
    tiny = float(ml_dtypes.finfo(dtypes.as_dtype(dtype)).smallest_subnormal) / 2
    accumulation = LAMBDA * unit_roundoff(acc_dtype) * k * rms
    return unit_roundoff(dtype) * magnitude + accumulation + tiny
