"""GMEM arrays with an extent-1 dimension (a single-row A, as in M = 1 decoding) keep every dimension in their
TMA descriptors: CuTe drops static extent-1 modes, so such extents are read at run time from a constant 1."""
import re

import pytest

import tilegemm as tg
from tilegemm.ops import hopper_matmul

from .examples import lower


def tma_forms(ptx):
    return sorted(set(re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", ptx)))


@pytest.fixture(scope="module")
def single_row():
    kernel = hopper_matmul.build(1, 64, 64)
    return kernel.lower(tg.ShapeDtype((1, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16), arch="sm_90a")


def test_a_single_row_operand_is_still_copied_by_a_two_dimensional_tma(single_row):
    assert tma_forms(single_row.ptx) == ["2"]


def test_the_host_function_takes_the_constant_one_and_every_launch_passes_it(single_row):
    assert re.search(r"def hopper_flagship\(a_ptr: cute\.Pointer, b_ptr: cute\.Pointer, c_ptr: cute\.Pointer, "
                     r"one: cutlass\.Int32, stream: cuda\.CUstream\)", single_row.source)
    assert "cute.make_layout((one, 64), stride=(64, 1))" in single_row.source
    compiled = single_row.compile()
    assert compiled.constants == (("one", 1),)


def test_arrays_without_extent_one_dimensions_have_fully_static_shapes():
    kernel = hopper_matmul.build(2, 64, 64)
    lowered = kernel.lower(tg.ShapeDtype((2, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16))
    assert "one: cutlass.Int32" not in lowered.source and lowered.generated.constants == ()


@pytest.mark.parametrize("name", ["hopper_v0_naive", "hopper_v1_smem"])
def test_cuda_core_rungs_compile_with_a_single_row(name):
    assert lower(name, (1, 64, 64)).compile().constants == (("one", 1),)
