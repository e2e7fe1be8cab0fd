"""Verifier: every MMA width the PTX ISA allows verifies (WGMMA: N a multiple of 8 up to 256; tcgen05: N in the
steps of its mode), the rest do not."""
import pytest

import tilegemm as tg

from .helpers import spec, trace
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


def tcgen05_with_a_in_tmem(m, n, pair=False):
    """Traces one tcgen05_mma with A (m x 64 f16) in TMEM, B in SMEM, 1-CTA or split over a 2-block pair."""
    def body(x, out, acc, a, b, ballast):
        tg.tcgen05_mma(acc, a, b, accumulate=False, collective_axis="pair" if pair else None)
    b_cols = n // 2 if pair else n
    # 128 KiB of shared memory: one block per SM, so the TMEM columns of co-resident blocks fit in 512
    scratch = [tg.TMEM((m, n), tg.float32, collective=pair), tg.TMEM((m, 64), tg.float16, collective=pair),
               smem(64, b_cols),
               tg.SMEM((64 * 1024,), tg.float16)]
    return trace(body, spec(128, 128), scratch=scratch,
                 **(dict(cluster=(2,), cluster_names=("pair",)) if pair else {}))


@pytest.mark.parametrize("m, pair, step", [(128, False, 16), (128, True, 32)])   # M=64 is rejected (not modelled)
def test_tcgen05_with_a_in_tmem_takes_n_in_the_steps_of_its_mode(m, pair, step):
    tcgen05_with_a_in_tmem(m, 2 * step, pair)
    tcgen05_with_a_in_tmem(m, 3 * step, pair)
    if step > 8:
        with pytest.raises(tg.KernelError, match=f"N must be a multiple of {step} between {step} and 256"):
            tcgen05_with_a_in_tmem(m, 3 * step - 8, pair)
