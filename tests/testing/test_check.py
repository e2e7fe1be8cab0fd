"""check: a kernel against numpy over shapes, dtypes, interpreter schedules and the GPU. It passes correct kernels
and fails, naming the case and how to rerun it, on an off-by-one tile edge, unwritten rows, a missing barrier wait
and an f16 accumulator."""
import functools
import importlib
import os

import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.showcase import load_example
from tilegemm.testing import defaults as session_defaults

from .kernels import FLOOR, matmul, reference

RAGGED = [(1, 8, 8), (72, 136, 200), (130, 72, 64)]
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@pytest.fixture
def defaults():
    """Restores check's session defaults after a test changes them."""
    previous = tt.configure()
    yield
    session_defaults.restore(previous)


def failure(builder, shapes, **kwargs):
    """The CheckFailure that checking `builder` in f16 in the interpreter raises."""
    with pytest.raises(tt.CheckFailure) as info:
        tt.check(builder, reference, shapes=shapes, dtypes=[tg.float16], modes=["interpret"], **kwargs)
    return info.value


def test_a_correct_kernel_passes_at_ragged_shapes_in_f16_and_bf16_under_three_schedules():
    runs = tt.check(matmul, reference, shapes=RAGGED, modes=["interpret"])
    assert [(r.case.shape, r.case.dtype, r.case.seed) for r in runs] == [
        (s, d, seed) for s in RAGGED for d in (tg.float16, tg.bfloat16) for seed in (None, 1, 2)]
    assert all(c.ok for r in runs for c in r.comparisons)


def test_a_warp_specialized_example_passes_under_shuffled_schedules():
    example = load_example(os.path.join(EXAMPLES, "hopper_v4_tuned.py"))
    runs = tt.check(example.build, reference, shapes=[(136, 264, 72)], dtypes=["f16"], modes=["interpret"],
                    seeds=[None, 1, 2, 3])
    assert [r.case.seed for r in runs] == [None, 1, 2, 3]


def test_a_k_loop_that_drops_the_ragged_last_tile_fails_and_the_failure_names_the_case():
    error = failure(functools.partial(matmul, k_steps=FLOOR), [(64, 64, 64), (72, 8, 72)])
    assert error.case == tt.Case((72, 8, 72), tg.float16, "interpret", None)
    message = str(error)
    assert message.startswith("check failed at (M, N, K) = (72, 8, 72), f16, in the interpreter, deterministic "
                              "schedule")
    worst = error.comparisons[0].worst
    assert f"worst element {list(worst.index)}: got {worst.got:.6g}, expected {worst.expected:.6g}" in message
    assert "reproduce: tilegemm.testing.check(functools.partial(" in message


def test_rows_a_grid_leaves_out_are_reported_as_unwritten():
    error = failure(functools.partial(matmul, m_blocks=FLOOR), [(72, 8, 64)])
    (comparison,) = error.comparisons
    assert comparison.unwritten == 8 * 8 and comparison.unwritten_box == ((64, 72), (0, 8))
    assert "64 of 576 elements are NaN where the reference is finite" in str(error)


def test_a_missing_barrier_wait_fails_as_a_race_at_the_mma_line():
    error = failure(functools.partial(matmul, wait=False), [(64, 64, 64)])
    assert isinstance(error.__cause__, tg.RaceError) and error.comparisons == ()
    assert f"RaceError: {line_of('wgmma')}: wgmma" in str(error)


def test_an_f16_accumulator_fails_unless_declared():
    f16_accumulator = functools.partial(matmul, acc_dtype=tg.float16)
    error = failure(f16_accumulator, [(64, 64, 16), (64, 64, 64)])   # rounded after each instruction (K = 16)
    assert error.case.shape == (64, 64, 64) and error.comparisons[0].beyond > 0
    tt.check(f16_accumulator, reference, shapes=[(64, 64, 64)], dtypes=[tg.float16], modes=["interpret"],
             acc_dtype=tg.float16)


def test_the_reproduce_line_reruns_the_failing_case():
    error = failure(functools.partial(matmul, k_steps=FLOOR, tile_n=128), [(64, 128, 64), (8, 8, 8)],
                    seeds=[None, 5], input_seed=3)
    assert "shapes=[(8, 8, 8)]" in error.reproduce and "seeds=[None]" in error.reproduce
    assert "input_seed=3" in error.reproduce
    names = {"tilegemm", "functools", "numpy", "_operator", matmul.__module__}
    scope = {name.split(".")[0]: importlib.import_module(name.split(".")[0]) for name in names}
    with pytest.raises(tt.CheckFailure) as again:
        eval(error.reproduce, scope)
    assert again.value.case == error.case and str(again.value) == str(error)


def test_a_kernel_is_checked_at_the_shape_and_dtype_it_was_built_for():
    runs = tt.check(matmul(72, 136, 200, tg.bfloat16), reference, shapes=[(72, 136, 200)], dtypes=["bf16"],
                    modes=["interpret"])
    assert [r.case.dtype for r in runs] == [tg.bfloat16] * 3
    with pytest.raises(ValueError, match=r"pass dtypes=\[\.\.\.\]"):
        tt.check(matmul(72, 136, 200), reference, shapes=[(72, 136, 200)])


def test_an_illegal_kernel_fails_its_first_case_with_the_kernel_error():
    error = failure(functools.partial(matmul, tile_n=180), [(64, 180, 64)])
    assert isinstance(error.__cause__, tg.KernelError) and "KernelError: " in str(error)


def test_each_output_is_compared_and_a_wrong_one_is_named():
    def builder(m, n, k, dtype):
        kernel = matmul(m, n, k, dtype)
        return lambda *arrays, **run: (kernel(*arrays, **run), -kernel(*arrays, **run))
    runs = tt.check(builder, lambda a, b: (a @ b, -(a @ b)), shapes=[(64, 64, 64)], modes=["interpret"])
    assert all(len(r.comparisons) == 2 for r in runs)
    with pytest.raises(tt.CheckFailure, match="output 1: 4096 of 4096 elements beyond tolerance"):
        tt.check(builder, lambda a, b: (a @ b, a @ b), shapes=[(64, 64, 64)], modes=["interpret"])
    with pytest.raises(tt.CheckFailure, match=r"returned 2 output\(s\), the reference 1"):
        tt.check(builder, reference, shapes=[(64, 64, 64)], modes=["interpret"])


def test_inputs_come_from_the_generator_given():
    def ones(m, n, k, dtype, seed):
        return np.ones((m, k), dtype), np.full((k, n), seed, dtype)
    (run,) = tt.check(matmul, lambda a, b: np.full((8, 8), 7.0 * 16), shapes=[(8, 8, 16)], dtypes=["f16"],
                      modes=["interpret"], seeds=[None], inputs=ones, input_seed=7)
    assert run.comparisons[0].worst.got == 7 * 16


def test_the_schedules_are_the_deterministic_one_and_as_many_shuffled_as_configured(defaults):
    seeds = lambda: [r.case.seed for r in tt.check(matmul, reference, shapes=[(8, 8, 8)], dtypes=["f16"],
                                                   modes=["interpret"])]
    assert seeds() == [None, 1, 2]
    tt.configure(shuffled_schedules=4)
    assert seeds() == [None, 1, 2, 3, 4]
    tt.configure(shuffled_schedules=0)
    assert seeds() == [None]


def test_interpret_only_leaves_out_the_gpu_and_refuses_to_run_there(defaults):
    tt.configure(interpret_only=True)
    assert {r.case.mode for r in tt.check(matmul, reference, shapes=[(8, 8, 8)])} == {"interpret"}
    with pytest.raises(tg.LaunchError, match="--tg-interpret-only is set"):
        tt.check(matmul, reference, shapes=[(8, 8, 8)], modes=["interpret", "gpu"])


@pytest.mark.skipif(tt.gpu.unavailable_reason() is None, reason="needs a machine where kernels cannot run on a GPU")
def test_without_a_gpu_the_default_modes_are_the_interpreter_and_asking_for_the_gpu_raises():
    assert {r.case.mode for r in tt.check(matmul, reference, shapes=[(8, 8, 8)])} == {"interpret"}
    with pytest.raises(tg.LaunchError, match=f"cannot run on the GPU: {tt.gpu.unavailable_reason()}"):
        tt.check(matmul, reference, shapes=[(8, 8, 8)], modes=["gpu"])


def test_unknown_modes_and_malformed_shapes_are_refused():
    with pytest.raises(ValueError, match=r"unknown mode\(s\) \['cuda'\]"):
        tt.check(matmul, reference, shapes=[(8, 8, 8)], modes=["cuda"])
    with pytest.raises(ValueError, match=r"shapes are \(M, N, K\) of positive ints, got \(8, 8\)"):
        tt.check(matmul, reference, shapes=[(8, 8)])


def line_of(name):
    """'<path>:<line>' of the statement of kernels.py marked `# line: <name>`, as error messages print it."""
    path = os.path.join(os.path.dirname(__file__), "kernels.py")
    with open(path) as f:
        (number,) = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# line: {name}")]
    return f"{os.path.relpath(path)}:{number}"
