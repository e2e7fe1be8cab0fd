"""fp8 (e4m3, e5m2) MMAs lower to the instruction table's forms: WGMMA m64nNk32 with both operands K-major on
sm_90a (compiled, and on the GPU checked against numpy), tcgen05.mma kind::f8f6f4 on sm_100a (compiled only: no
Blackwell hardware is available)."""
import warnings

import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs, relative_error, stored_operands

from . import kernels

FP8 = {"e4m3": tg.float8_e4m3fn, "e5m2": tg.float8_e5m2}
CUTLASS = {"e4m3": "cutlass.Float8E4M3FN", "e5m2": "cutlass.Float8E5M2"}
SHAPE = (200, 264, 320)   # ragged: two row blocks, three column blocks, a partial K step
TILE_K = 128              # 128 fp8 elements: one 128-byte swizzle row, four K=32 instructions


def fp8_kernel(name, arch):
    build = kernels.transposed_operands if arch == "sm_90a" else kernels.transposed_tcgen05
    return build(*SHAPE, "mk", "nk", tile_k=TILE_K, dtype=FP8[name])


@pytest.mark.parametrize("name", FP8)
def test_wgmma_of_fp8_compiles_to_k32_instructions_reading_both_operands_k_major(name):
    lowered = fp8_kernel(name, "sm_90a").lower(*operand_specs(*SHAPE, FP8[name], "mk", "nk"), arch="sm_90a")
    assert f"make_trivial_tiled_mma({CUTLASS[name]}, {CUTLASS[name]}" in lowered.source
    assert ("OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (64, 128))"
            in lowered.source)
    with warnings.catch_warnings():   # compile() checks the PTX's MMAs against the graph (tilegemm.lower.facts)
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        ptx = lowered.compile().ptx
    assert f"wgmma.mma_async.sync.aligned.m64n128k32.f32.{name}.{name}" in ptx


@pytest.mark.parametrize("name", FP8)
def test_tcgen05_of_fp8_compiles_to_kind_f8f6f4(name):
    lowered = fp8_kernel(name, "sm_100a").lower(*operand_specs(*SHAPE, FP8[name], "mk", "nk"), arch="sm_100a")
    assert f"make_trivial_tiled_mma({CUTLASS[name]}, {CUTLASS[name]}" in lowered.source
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        ptx = lowered.compile().ptx
    assert "tcgen05.mma" in ptx and "kind::f8f6f4" in ptx


@pytest.mark.parametrize("name", FP8)
def test_the_interpreter_multiplies_the_fp8_values_exactly_in_f32(name):
    a, b = random_inputs(*SHAPE, FP8[name])
    out = fp8_kernel(name, "sm_90a")(*stored_operands(a, b, "mk", "nk"), interpret=True)
    assert relative_error(out, a, b) < 1e-3   # only the f16 output rounds (2^-11 relative)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("name", FP8)
def test_wgmma_of_fp8_matches_numpy_on_the_gpu(name):
    a, b = random_inputs(*SHAPE, FP8[name])
    out = fp8_kernel(name, "sm_90a")(*stored_operands(a, b, "mk", "nk"))
    assert relative_error(out, a, b) < 2e-3   # f16 output and the tensor core's fp8 accumulation over K=320
