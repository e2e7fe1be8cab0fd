"""tilegemm.testing.stored_operands: inputs stored either way round and the product they stand for, so a kernel
taking a weight stored [N, K] (or A stored [K, M]) is checked like any other."""
import functools

import numpy as np
import pytest

import tilegemm.testing as tt
from tilegemm.ops import hopper_matmul


@pytest.mark.parametrize("a_layout, b_layout", [("mk", "nk"), ("km", "kn"), ("km", "nk")])
def test_the_flagship_taking_operands_stored_either_way_passes_a_check(a_layout, b_layout):
    inputs, reference = tt.stored_operands(a_layout, b_layout)
    build = functools.partial(hopper_matmul.build, a_layout=a_layout, b_layout=b_layout, tile_n=128,
                              schedule="cooperative")
    (run,) = tt.check(build, reference, shapes=[(136, 200, 72)], dtypes=["float16"], modes=["interpret"],
                      seeds=[None], inputs=inputs)
    assert run.comparisons[0].ok


def test_the_inputs_are_the_stored_arrays_of_one_product():
    inputs, reference = tt.stored_operands("km", "nk")
    at, w = inputs(8, 16, 24, np.float16)
    assert at.shape == (24, 8) and w.shape == (16, 24) and at.flags.c_contiguous and w.flags.c_contiguous
    np.testing.assert_array_equal(reference(at.astype(np.float64), w.astype(np.float64)),
                                  at.T.astype(np.float64) @ w.T.astype(np.float64))


def test_a_kernel_given_operands_in_the_wrong_layout_fails_its_check():
    inputs, reference = tt.stored_operands("mk", "nk")
    with pytest.raises(tt.CheckFailure):   # the default flagship reads B as [K, N]: a square B is read transposed
        tt.check(hopper_matmul.build, reference, shapes=[(64, 64, 64)], dtypes=["float16"], modes=["interpret"],
                 seeds=[None], inputs=inputs)
