"""Verifier: every MMA width the PTX ISA allows verifies (WGMMA: N a multiple of 8 up to 256; tcgen05: N in the
steps of its mode), the rest do not."""
import pytest

import tilegemm as tg

from .helpers import raises_at, spec, trace
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


def test_a_tcgen05_a_operand_in_tmem_is_refused_naming_where_a_must_live():
    def body(x, out, acc, a, b):
        tg.tcgen05_mma(acc, a, b, accumulate=False)  # @a_in_tmem

    scratch = [tg.TMEM((128, 64), tg.float32), tg.TMEM((128, 64), tg.float16), smem(64, 64)]
    with raises_at("a_in_tmem", "tcgen05_mma A operand is a TMEM ref; tilegemm lowers tcgen05.mma with A in SMEM"):
        trace(body, spec(128, 128), scratch=scratch)


@pytest.mark.parametrize("pair, step", [(False, 8), (True, 16)])
def test_tcgen05_takes_n_in_the_steps_of_its_mode(pair, step):
    def body(x, out, acc, a, b, one_block_an_sm):
        tg.tcgen05_mma(acc, a, b, accumulate=False, collective_axis="pair" if pair else None)

    def traced(n):
        scratch = [tg.TMEM((128, n), tg.float32, collective=pair), smem(128, 64), smem(64, n // 2 if pair else n),
                   tg.SMEM((64 * 1024,), tg.float16)]   # blocks of a cluster wait for TMEM only one an SM
        return trace(body, spec(128, 128), scratch=scratch,
                     **(dict(cluster=(2,), cluster_names=("pair",)) if pair else {}))
    traced(2 * step)
    traced(3 * step)
    with pytest.raises(tg.KernelError, match=f"N must be a multiple of {step} between {step} and 256"):
        traced(3 * step + 8 if pair else 3 * step + 4)
