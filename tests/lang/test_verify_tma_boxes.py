"""Verifier: a TMA box (the SMEM side of a copy) has at most 5 dimensions, whatever the array it comes from."""
import pytest

import tilegemm as tg

from .helpers import spec, trace
from .test_verify_tma import load


def test_a_six_dimensional_box_is_rejected_as_a_box():
    body, scratch = load(lambda a: a, (1, 1, 1, 1, 8, 64))
    with pytest.raises(tg.KernelError, match=r"copy_gmem_to_smem: a TMA box has 1 to 5 dimensions, the SMEM side "
                                             r"\S+ has 6"):
        trace(body, spec(1, 1, 1, 1, 8, 64), scratch=scratch)


def test_a_five_dimensional_box_verifies():
    body, scratch = load(lambda a: a, (1, 1, 1, 8, 64))
    trace(body, spec(1, 1, 1, 8, 64), scratch=scratch)
