"""tg.debug_print lowered to cute.printf: one thread per warpgroup prints (one lane per warp inside a core_map)."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tests.interpret.test_printing import printing_kernel


def test_debug_print_becomes_a_guarded_printf_with_percent_signs_escaped():
    lowered = printing_kernel().lower(tg.ShapeDtype((64, 64), tg.float32), arch="sm_90a")
    code = lowered.source
    assert ("if thread_in_warpgroup == 0:\n"
            "        cute.printf('block {} warpgroup {}: {} and {} 100%%'") in code
    assert "cutlass.Int32(7))" in code
    assert "with cute.arch.elect_one():\n            cute.printf('warp {}', warp_in_warpgroup)" in code
    assert "vprintf" in lowered.compile().ptx


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_each_warpgroup_prints_its_line_on_the_gpu(capfd):
    out = printing_kernel()(np.ones((64, 64), np.float32))
    lines = capfd.readouterr().out.splitlines()
    assert sorted(line for line in lines if line.startswith(("block", "warp"))) == sorted(
        [f"block {b} warpgroup {w}: {b * 10 + w} and 7 100%" for b in (0, 1) for w in (0, 1)]
        + [f"warp {w}" for w in range(4)])
    assert (out == 0).all()
