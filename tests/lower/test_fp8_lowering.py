"""fp8 (e4m3, e5m2, and the two mixed: A of one, B of the other) MMAs lower to the instruction table's forms:
WGMMA m64nNk32 with both operands K-major on sm_90a (compiled, and on the GPU checked against numpy), tcgen05.mma
kind::f8f6f4 on sm_100a (compiled only: no Blackwell hardware is available)."""
import warnings

import pytest

import tilegemm as tg
from tilegemm.lang.dtypes import as_dtype
from tilegemm.model.layouts import operand_specs
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs, relative_error, stored_operands

from . import kernels

FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types
CUTLASS = {"e4m3": "cutlass.Float8E4M3FN", "e5m2": "cutlass.Float8E5M2"}
PAIRS = [(a, b) for a in FP8 for b in FP8]   # (A's type, B's type): the tensor cores mix them
PAIR_IDS = [f"{a}-{b}" for a, b in PAIRS]
SHAPE = (200, 264, 320)   # ragged: two row blocks, three column blocks, a partial K step
TILE_K = 128              # 128 fp8 elements: one 128-byte swizzle row, four K=32 instructions


def fp8_kernel(a_name, b_name, arch):
    build = kernels.transposed_operands if arch == "sm_90a" else kernels.transposed_tcgen05
    return build(*SHAPE, "mk", "nk", tile_k=TILE_K, dtype=as_dtype(a_name), b_dtype=as_dtype(b_name))


def lowered(a_name, b_name, arch):
    a_spec, _ = operand_specs(*SHAPE, as_dtype(a_name), "mk", "nk")
    _, b_spec = operand_specs(*SHAPE, as_dtype(b_name), "mk", "nk")
    return fp8_kernel(a_name, b_name, arch).lower(a_spec, b_spec, arch=arch)


def compiled_ptx(kernel):
    with warnings.catch_warnings():   # compile() checks the PTX's MMAs against the graph (tilegemm.lower.facts)
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        return kernel.compile().ptx


def fp8_inputs(a_name, b_name):
    """iid-normal A and B rounded to their own types."""
    a, _ = random_inputs(*SHAPE, as_dtype(a_name))
    _, b = random_inputs(*SHAPE, as_dtype(b_name), seed=1)
    return a, b


@pytest.mark.parametrize("a_name, b_name", PAIRS, ids=PAIR_IDS)
def test_wgmma_of_fp8_compiles_to_k32_instructions_reading_both_operands_k_major(a_name, b_name):
    kernel = lowered(a_name, b_name, "sm_90a")
    assert f"make_trivial_tiled_mma({CUTLASS[a_name]}, {CUTLASS[b_name]}" in kernel.source
    assert ("OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (64, 128))"
            in kernel.source)
    assert f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{a_name}.{b_name}" in compiled_ptx(kernel)


@pytest.mark.parametrize("a_name, b_name", PAIRS, ids=PAIR_IDS)
def test_tcgen05_of_fp8_compiles_to_kind_f8f6f4(a_name, b_name):
    kernel = lowered(a_name, b_name, "sm_100a")
    assert f"make_trivial_tiled_mma({CUTLASS[a_name]}, {CUTLASS[b_name]}" in kernel.source
    ptx = compiled_ptx(kernel)
    assert "tcgen05.mma" in ptx and "kind::f8f6f4" in ptx


@pytest.mark.parametrize("a_name, b_name", PAIRS, ids=PAIR_IDS)
def test_the_interpreter_multiplies_the_fp8_values_exactly_in_f32(a_name, b_name):
    a, b = fp8_inputs(a_name, b_name)
    out = fp8_kernel(a_name, b_name, "sm_90a")(*stored_operands(a, b, "mk", "nk"), interpret=True)
    assert relative_error(out, a, b) < 1e-3   # only the f16 output rounds (2^-11 relative)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("a_name, b_name", PAIRS, ids=PAIR_IDS)
def test_wgmma_of_fp8_matches_numpy_on_the_gpu(a_name, b_name):
    a, b = fp8_inputs(a_name, b_name)
    out = fp8_kernel(a_name, b_name, "sm_90a")(*stored_operands(a, b, "mk", "nk"))
    assert relative_error(out, a, b) < 2e-3   # f16 output and the tensor core's fp8 accumulation over K=320
