"""Verifier: every WGMMA width the PTX ISA allows (N a multiple of 8 from 8 to 256) verifies, the rest do not."""
import pytest

import tilegemm as tg

from .test_verify_mma import smem, wgmma_of


@pytest.mark.parametrize("n", range(8, 257, 8))
def test_every_multiple_of_8_up_to_256_is_a_legal_wgmma_n(n):
    graph = wgmma_of(tg.ACC((64, n)), smem(64, 64), smem(64, n))
    (mma,) = [op for op in graph.walk() if op.kind == "wgmma"]
    assert mma.operands[0].shape == (64, n)


@pytest.mark.parametrize("n, legal", [(4, "8"), (12, "8 or 16"), (20, "16 or 24"), (188, "184 or 192"),
                                      (260, "256")])
def test_widths_off_the_multiples_of_8_name_the_nearest_legal_ones(n, legal):
    with pytest.raises(tg.KernelError, match=f"wgmma N={n} is not a WGMMA shape: N must be a multiple of 8 "
                                             f"between 8 and 256, e.g. {legal}$"):
        wgmma_of(tg.ACC((64, n)), smem(64, 64), smem(64, n))
