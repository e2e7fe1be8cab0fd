"""SMEM buffers' CuTe layouts: a ring of WGMMA operand tiles is tiled from its atom, and one stage of it (what a
TMA copy fills) is tiled as such rather than sliced out of the ring (CuTe DSL's compiler aborted slicing rings of
K-major B tiles whose rows are an odd number of 8-row atoms, e.g. 152)."""
import re

import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import hopper_matmul


def swapped_kernel(width, m=5000, n=1000, k=3000):
    """tg.matmul's swapped 256-row cooperative tile `width` wide (A^T as a K-major B, in a ring of 4 stages)."""
    return hopper_matmul.build(m, n, k, dtype=tg.float16, tile_m=256, tile_n=width, schedule="cooperative",
                               epi_tile_n=8, swap_ab=True, stages=4, a_layout="mk", b_layout="kn").lower(
        *operand_specs(m, n, k, tg.float16, "mk", "kn"), arch="sm_90a")


@pytest.mark.parametrize("width", [136, 152, 184])
def test_a_ring_of_k_major_b_tiles_of_any_8_row_multiple_compiles(width):
    lowered = swapped_kernel(width)
    source = lowered.source
    assert not re.search(r"cute\.slice_\(\w+_layout\(\), \(None, None, 0\)\)", source)   # no stage sliced...
    stage = source[source.index("def b_smem_stage_layout():"):]   # ...but one stage tiled, for the TMA copy's box
    assert f"return cute.tile_to_shape(atom, ({width}, 64), order=(0, 1))" in stage[:stage.index("\n\n")]
    assert re.search(r"make_tiled_tma_atom\([^\n]*b_smem_stage_layout\(\), \(" + str(width), source)
    compiled = lowered.compile()
    assert f"wgmma.mma_async.sync.aligned.m64n{width}k16" in compiled.ptx
    assert compiled.meta["wgmma_serialized"] is not True
