"""Tests of my kernel (my_kernel.py) against numpy. `pytest test_my_kernel.py` runs them in the numpy
interpreter everywhere, and also on the GPU where a Hopper or Blackwell GPU is present."""
import numpy as np
import pytest
from hypothesis import given, settings

import tilegemm.testing as tt
from my_kernel import build


def reference(a, b):  # float64 copies of the kernel's inputs
    return np.maximum(a @ b, 0.0)


def test_matches_numpy_at_ragged_shapes():
    tt.check(build, reference, shapes=[(64, 128, 64), (200, 136, 72), (1, 8, 8)])


@settings(max_examples=10, deadline=None)
@given(shape=tt.shapes(tile=(64, 128, 64)), dtype=tt.dtypes())
def test_matches_numpy_at_any_shape(shape, dtype):
    tt.check(build, reference, shapes=[shape], dtypes=[dtype])


@pytest.mark.gpu
def test_matches_numpy_on_the_gpu_at_a_large_ragged_shape():
    tt.check(build, reference, shapes=[(1000, 1016, 520)], modes=["gpu"])
