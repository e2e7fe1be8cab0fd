"""Scratch specs: the shared memory they take and the deepest pipeline ring that fits (tg.max_stages)."""
import dataclasses

import pytest

import tilegemm as tg
from tilegemm.lang.arch import DEFAULT_LIMITS
from tilegemm.lang.scratch import shared_storage_of

from tests.lower.kernels import one_wgmma

KIB = 1024


def ring(tile_bytes, extra_bytes=0):
    """scratch_for(stages): a ring of `stages` f16 tiles of `tile_bytes`, its two barrier arrays, and an
    `extra_bytes` buffer beside it."""
    def scratch_for(stages):
        specs = dict(ring=tg.SMEM((stages, tile_bytes // 2), tg.float16),
                     loaded=tg.Barrier(num_barriers=stages), consumed=tg.Barrier(num_barriers=stages))
        if extra_bytes:
            specs["epilogue"] = tg.SMEM((extra_bytes // 2,), tg.float16)
        return specs
    return scratch_for


def test_shared_storage_counts_barriers_first_then_buffers_at_1024_byte_boundaries():
    specs = [tg.Barrier(num_barriers=3), tg.SMEM((100,), tg.float16), tg.TMEM((128, 64), tg.float32),
             tg.ClusterBarrier(collective_axes="x", num_barriers=2)]
    assert shared_storage_of(specs) == 1024 + 1024     # 40 bytes of mbarriers, 200 bytes of buffer, each rounded
    assert shared_storage_of(dict(enumerate(specs))) == shared_storage_of(specs)


def test_max_stages_is_the_deepest_ring_that_fits_a_block():
    assert tg.max_stages(ring(32 * KIB, 32 * KIB)) == 6        # 6 x 32 + 32 + 1 (barriers) = 225 <= 227 KiB
    assert tg.max_stages(ring(32 * KIB, 64 * KIB)) == 5
    assert tg.max_stages(ring(16 * KIB)) == 14


def test_max_stages_reads_the_limit_of_the_target():
    small = dataclasses.replace(DEFAULT_LIMITS, smem_per_block=100 * KIB)
    assert tg.max_stages(ring(32 * KIB), limits=small) == 3


def test_a_ring_too_large_for_one_stage_is_an_error_naming_the_limit():
    with pytest.raises(tg.KernelError, match="even one stage needs .* over the 232448 a block may use"):
        tg.max_stages(ring(200 * KIB, 64 * KIB))


def test_a_scratch_function_that_ignores_the_stage_count_is_an_error():
    with pytest.raises(tg.KernelError, match="must allocate the ring"):
        tg.max_stages(lambda stages: [tg.SMEM((64, 64), tg.float16)])


# ----------------------------------------------------------------------------- MMA layouts

@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_mma_transforms_give_a_layout_the_verifier_accepts_for_every_wgmma_width(dtype):
    for n in range(8, 257, 8):
        one_wgmma(n, dtype).trace(tg.ShapeDtype((64, 64), dtype), tg.ShapeDtype((64, n), dtype))


@pytest.mark.parametrize("minor_bytes", range(16, 513, 16))
def test_find_swizzle_gives_the_largest_swizzle_whose_rows_divide_the_dimension(minor_bytes):
    swizzle = tg.find_swizzle(minor_bytes * 8)
    assert minor_bytes % swizzle == 0
    assert all(minor_bytes % larger for larger in (128, 64, 32) if larger > swizzle)
    transforms = tg.mma_transforms(minor_bytes // 2, tg.float16)
    assert transforms == (() if swizzle == 16 else (tg.TilingTransform((8, swizzle // 2)), tg.SwizzleTransform(swizzle)))
