"""The block-scaled flagship compiles for sm_90a (on the CPU) into the promoting K loop: fp8 WGMMAs, and scales read
once per distinct element (scale_a for the two rows a thread's accumulator fragment holds, not for each of its
elements); with its scales staged in SMEM, in every layout, into code the PTX checks find consistent."""
import re
import warnings

import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import blockscaling, hopper_matmul

SHAPE = (200, 136, 304)   # ragged M, N and K
STAGED_SHAPE = (200, 496, 1488)   # M, ceil(K/128) and ceil(N/128) multiples of 4: TMA stages every scale layout


def compile_checked(m, n, k, scales, **params):
    """The PTX of the block-scaled kernel, compiled with the PTX checks' findings (tilegemm.lower.facts) as errors."""
    kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, tile_k=128, schedule="cooperative", a_layout="mk",
                                 b_layout="nk", block_scales=scales, **params)
    lowered = kernel.lower(*operand_specs(m, n, k, tg.float8_e4m3fn, "mk", "nk"), *scales.specs(m, n, k),
                           arch="sm_90a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        return lowered.compile().ptx


@pytest.fixture(scope="module")
def ptx():
    return compile_checked(*SHAPE, blockscaling.BlockScales("km", "nk"), tile_n=128)


def test_the_block_scaled_kernel_compiles_to_fp8_wgmmas(ptx):
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx


def test_scales_are_read_once_per_distinct_element(ptx):
    # scale_a's two rows and scale_b's one block for a thread's accumulator: before the K loop for each of the
    # SCALES_AHEAD first steps, and in it for the step that many ahead
    assert len(re.findall(r"ld\.global", ptx)) <= 3 * (hopper_matmul.SCALES_AHEAD + 1)


@pytest.mark.parametrize("scale_layouts", [("km", "nk"), ("mk", "kn"), ("mk", "nk"), ("km", "kn")])
def test_staged_scales_compile_to_code_the_ptx_checks_accept(scale_layouts):
    # The K loop keeps step % stages as counters the PTX checks must read together, and a scale_b "kn" box of
    # whole [Kb, 4] rows is one 1-D TMA copy (tilegemm.lower.facts)
    scales = blockscaling.BlockScales(*scale_layouts)
    m, n, k = STAGED_SHAPE
    assert scales.staged_slots(m, n, k, 128) is not None
    stages = hopper_matmul.deepest_stages(tg.float8_e4m3fn, tile_m=128, tile_n=64, tile_k=128,
                                          schedule="cooperative", a_layout="mk", b_layout="nk", promoted=True,
                                          scale_slots=scales.staged_slots(m, n, k, 128), most=7)
    assert "cp.async.bulk.tensor" in compile_checked(m, n, k, scales, tile_n=64, stages=stages)


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "gmem"])
def test_a_kernel_split_over_k_compiles_to_code_the_ptx_checks_accept(staged):
    # each slice's K blocks start at k_slice * k_steps: the scale reads and staged boxes index the global block
    scales = blockscaling.BlockScales("km", "nk") if staged else blockscaling.BlockScales("km", "nk").read_from_gmem()
    m, n, k = STAGED_SHAPE
    ptx = compile_checked(m, n, k, scales, tile_n=128, stages=4, split_k=4)   # 12 blocks: slices of 3
    assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx
