"""tg.while_loop and tg.cond lowered to CuTe DSL's dynamic `while` and `if`/`else` over variables declared before
them; on the GPU they compute what the interpreter does."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs
from tests.interpret.test_branching import branchy_kernel, expected_lines, while_k_loop

on_gpu = pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")


def test_while_loop_and_cond_become_a_dynamic_while_and_an_if_else_over_declared_variables():
    lowered = branchy_kernel().lower(tg.ShapeDtype((64, 64), tg.float32), arch="sm_90a")
    code = lowered.source
    assert "go = cutlass.Boolean((carry_1 >= 10))\n    while go:\n" in code
    assert "        go = cutlass.Boolean((carry_1 >= 10))\n" in code, "the condition is evaluated again each trip"
    assert "branch = cutlass.Int32(0)\n    if (b == 1):\n        branch = " in code and "    else:\n" in code
    lowered.compile()


def test_a_while_k_loop_with_tma_and_wgmma_compiles_for_sm90a():
    m, n, k = 200, 136, 72
    lowered = while_k_loop(m, n, k).lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16),
                                          arch="sm_90a")
    assert "while go:" in lowered.source
    assert "wgmma.mma_async" in lowered.compile().ptx


@pytest.mark.gpu
@on_gpu
def test_while_loop_and_cond_compute_what_python_does_on_the_gpu(capfd):
    branchy_kernel()(np.ones((64, 64), np.float32))
    lines = [line for line in capfd.readouterr().out.splitlines() if line.startswith("b=")]
    assert sorted(lines) == expected_lines()


@pytest.mark.gpu
@on_gpu
def test_a_while_k_loop_matches_numpy_on_the_gpu():
    m, n, k = 1000, 1016, 520
    a, b = random_inputs(m, n, k, tg.float16)
    out = while_k_loop(m, n, k)(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 1e-2
