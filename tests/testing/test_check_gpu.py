"""check on the GPU: a correct kernel passes, and outputs are poisoned so that rows a kernel leaves out show up as
unwritten even where the environment turned poisoning off; wrong sums are caught as in the interpreter."""
import functools

import pytest

import tilegemm as tg
import tilegemm.testing as tt

from .kernels import FLOOR, matmul, reference

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(tt.gpu.unavailable_reason() is not None,
                                                  reason="needs a Hopper or Blackwell GPU")]


def gpu_failure(builder, shape):
    """The CheckFailure that checking `builder` at `shape` in f16 on the GPU raises."""
    with pytest.raises(tt.CheckFailure) as info:
        tt.check(builder, reference, shapes=[shape], dtypes=["f16"], modes=["gpu"])
    assert info.value.case == tt.Case(shape, tg.float16, "gpu", None)
    return info.value


def test_a_correct_kernel_passes_on_the_gpu_at_ragged_shapes_in_f16_and_bf16():
    runs = tt.check(matmul, reference, shapes=[(1, 8, 8), (1000, 1016, 520)], modes=["gpu"])
    assert [(r.case.mode, r.case.shape[0]) for r in runs] == [("gpu", 1), ("gpu", 1), ("gpu", 1000), ("gpu", 1000)]


def test_rows_left_out_are_unwritten_on_the_gpu_even_with_poisoning_switched_off(monkeypatch):
    monkeypatch.setenv("TILEGEMM_POISON", "0")
    (comparison,) = gpu_failure(functools.partial(matmul, m_blocks=FLOOR), (72, 8, 64)).comparisons
    assert comparison.unwritten == 8 * 8 and comparison.unwritten_box == ((64, 72), (0, 8))


def test_a_k_loop_that_drops_the_ragged_last_tile_fails_on_the_gpu():
    assert gpu_failure(functools.partial(matmul, k_steps=FLOOR), (128, 128, 200)).comparisons[0].beyond > 0


def test_an_f16_accumulator_fails_on_the_gpu():
    assert gpu_failure(functools.partial(matmul, acc_dtype=tg.float16), (128, 128, 512)).comparisons[0].beyond > 0
