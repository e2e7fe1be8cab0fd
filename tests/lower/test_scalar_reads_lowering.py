"""Scalars read at run time (`idx[i]`) lowered: every kernel of tests/interpret/scalar_kernels.py compiles for sm_90a
and sm_100a; the read is a guarded element load where the op stands; on the GPU each kernel matches numpy."""
import numpy as np
import pytest

import tilegemm as tg
from tests.interpret.scalar_kernels import CASES, F16, T, matches
from tilegemm.runtime import device_count


def specs(inputs):
    return [tg.ShapeDtype(x.shape, x.dtype) for x in inputs]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("case", CASES)
def test_it_compiles(case, arch):
    kernel, inputs, _ = CASES[case]()
    assert ".entry" in kernel.lower(*specs(inputs), arch=arch).compile().ptx


def source_of(case):
    kernel, inputs, _ = CASES[case]()
    return kernel.lower(*specs(inputs), arch="sm_90a").source


def test_the_read_is_made_where_the_op_stands_after_the_wait_for_its_smem_copy():
    lines = [line.strip() for line in source_of("smem_prefetched_chunks").splitlines()]
    loop = next(i for i, line in enumerate(lines) if line.startswith("for i in cutlass.range(0, 3"))
    wait = next(i for i, line in enumerate(lines) if i > loop and line.startswith("cute.arch.mbarrier_wait("))
    read = next(i for i, line in enumerate(lines) if "= idx_smem" in line)
    assert loop < wait < read


def test_an_element_read_at_a_run_time_index_is_guarded_at_both_ends_of_the_array():
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), F16), scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def nested(a, idx, c, a_smem, loaded):
        tg.copy_gmem_to_smem(a.at[idx[idx[0]]], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c)
        tg.wait_smem_to_gmem(0)

    source = nested.lower(tg.ShapeDtype((4, T, T), F16), tg.ShapeDtype((3,), tg.int32), arch="sm_90a").source
    guards = [line.strip() for line in source.splitlines() if line.strip().startswith("if cute.elem_less(")]
    assert guards == ["if cute.elem_less((idx_value,), (3,)) & (idx_value >= 0):"]
    assert "cute.domain_offset((0, 0, idx_value_1)" in source   # the TMA coordinate is the value read


def on_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")(test))


@on_gpu
@pytest.mark.parametrize("case", CASES)
def test_it_matches_numpy_on_the_gpu(case):
    kernel, inputs, expected = CASES[case]()
    assert matches(kernel(*inputs), expected)


@on_gpu
def test_a_scalar_read_past_either_end_of_its_array_is_zero_on_the_gpu():
    kernel, _, _ = CASES["tma_load_of_an_expert_matrix"]()
    w = np.random.default_rng(0).standard_normal((3, T, T)).astype(np.float16)
    ids = np.array([-1, 3, 1, 7, 0], np.int32)   # before the first expert and past the last: zero tiles
    expected = np.concatenate([w[i] if 0 <= i < 3 else np.zeros((T, T)) for i in ids]).astype(np.float64)
    assert matches(kernel(w, ids), expected)
