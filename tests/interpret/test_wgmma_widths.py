"""WGMMA at the narrow and odd widths the hardware allows (N = 8, 24, ..., 184): the interpreter multiplies them."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.showcase import random_inputs

from tests.lower.kernels import one_wgmma


@pytest.mark.parametrize("n", [8, 24, 40, 184])
def test_a_wgmma_of_an_odd_multiple_of_8_columns_matches_numpy(n):
    a, b = random_inputs(64, n, 64, tg.float16)
    np.testing.assert_allclose(one_wgmma(n)(a, b, interpret=True), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-4)
