"""The block-scaled flagship compiles for sm_90a (on the CPU) into the promoting K loop: fp8 WGMMAs, and scales read
once per distinct element (scale_a for the two rows a thread's accumulator fragment holds, not for each of its
elements)."""
import re
import warnings

import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import blockscaling, hopper_matmul

SHAPE = (200, 136, 304)   # ragged M, N and K


@pytest.fixture(scope="module")
def ptx():
    m, n, k = SHAPE
    scales = blockscaling.BlockScales("km", "nk")
    kernel = hopper_matmul.build(m, n, k, tg.float8_e4m3fn, tile_n=128, tile_k=128, schedule="cooperative",
                                 a_layout="mk", b_layout="nk", block_scales=scales)
    lowered = kernel.lower(*operand_specs(m, n, k, tg.float8_e4m3fn, "mk", "nk"), *scales.specs(m, n, k),
                           arch="sm_90a")
    with warnings.catch_warnings():   # compile() checks the PTX's MMAs against the graph (tilegemm.lower.facts)
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        return lowered.compile().ptx


def test_the_block_scaled_kernel_compiles_to_fp8_wgmmas(ptx):
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx


def test_scales_are_read_once_per_distinct_element(ptx):
    # scale_a's two rows and scale_b's one block for a thread's accumulator: before the K loop for each of the
    # SCALES_AHEAD first steps, and in it for the step that many ahead
    assert len(re.findall(r"ld\.global", ptx)) <= 3 * (hopper_matmul.SCALES_AHEAD + 1)
