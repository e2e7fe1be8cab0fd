"""Verifier: swizzles legal for the minor dimension, and the same on the TMA (declared) and MMA sides."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, swizzled, trace


def allocate(buffer):
    """Traces a kernel that only allocates `buffer`."""
    return trace(lambda x, out, ref: None, spec(128, 128), scratch=[buffer])


def test_swizzle_must_be_a_hardware_swizzle():
    with raises_at("sw96", "SwizzleTransform(96) is not a hardware swizzle", "32, 64 or 128 bytes"):
        allocate(tg.SMEM((128, 64), F16, transforms=(tg.SwizzleTransform(96),)))  # @sw96


def test_swizzle_must_divide_the_minor_dimension():
    with raises_at("narrow", "minor dimension is 32 f16 = 64 bytes, not a multiple of 128",
                   "use transforms=(tg.TilingTransform((8, 32)), tg.SwizzleTransform(64)) (find_swizzle gives 64)"):
        allocate(tg.SMEM((128, 32), F16, transforms=swizzled(128)))  # @narrow


def test_minor_dimension_without_any_swizzle_asks_for_a_multiple_of_32_bytes():
    with raises_at("odd", "40 f16 = 80 bytes", "multiple of 16 elements or drop the SwizzleTransform"):
        allocate(tg.SMEM((128, 40), F16, transforms=(tg.SwizzleTransform(32),)))  # @odd


def test_tiling_must_match_the_swizzle():
    transforms = (tg.TilingTransform((8, 32)), tg.SwizzleTransform(128))
    with raises_at("tiling", "a 128-byte swizzle of f16 needs TilingTransform((8, 64))", "got TilingTransform((8, 32))"):
        allocate(tg.SMEM((128, 64), F16, transforms=transforms))  # @tiling


def test_tiling_needs_rows_in_multiples_of_8():
    with raises_at("rows", "second-to-last dimension to be a multiple of 8"):
        allocate(tg.SMEM((4, 64), F16, transforms=swizzled(128)))  # @rows


@pytest.mark.parametrize("shape, dtype, swizzle", [((4, 128, 64), F16, 128), ((64, 32), F16, 64),
                                                   ((128, 32), F32, 128), ((2, 128, 16), F16, 32)])
def test_matching_swizzles_verify(shape, dtype, swizzle):
    allocate(tg.SMEM(shape, dtype, transforms=swizzled(swizzle, dtype)))


def loads_then_multiplies(a_view=lambda a: a):
    """A kernel body: TMA-load A and B, then wgmma on `a_view(A)` and B."""
    def body(a_gmem, b_gmem, out, acc, a, b, bar):
        tg.copy_gmem_to_smem(a_gmem.at[:, 0:a.shape[1]], a, bar.at[0])  # @tma
        tg.copy_gmem_to_smem(b_gmem.at[0:b.shape[0]], b, bar.at[0])
        tg.barrier_wait(bar.at[0])
        tg.wgmma(acc, a_view(a), b)  # @mma
        tg.wgmma_wait(0)
    return body


def test_mma_and_tma_swizzles_must_agree():
    scratch = [tg.ACC((128, 128)),
               tg.SMEM((128, 64), F16, transforms=swizzled(64)),  # @a_smem
               tg.SMEM((64, 128), F16, transforms=swizzled(128)), tg.Barrier(num_arrivals=2)]
    with raises_at("mma", "wgmma reads operand A (smem<128x64xf16, tile(8, 32), swizzle64>) with a 128-byte swizzle",
                   "its contiguous dimension is 64 f16 = 128 bytes", "declared with a 64-byte swizzle",
                   "declare it with transforms=(tg.TilingTransform((8, 64)), tg.SwizzleTransform(128))") as err:
        trace(loads_then_multiplies(), spec(128, 64), spec(64, 128), scratch=scratch)
    err.names("a_smem", "the buffer is declared at")
    err.names("tma", "TMA writes it with a 64-byte swizzle at")


def test_an_unswizzled_operand_is_named_as_such():
    scratch = [tg.ACC((128, 128)), tg.SMEM((128, 64), F16), tg.SMEM((64, 128), F16, transforms=swizzled(128)),
               tg.Barrier(num_arrivals=2)]
    with raises_at("mma", "with a 128-byte swizzle", "declared with no swizzle"):
        trace(loads_then_multiplies(), spec(128, 64), spec(64, 128), scratch=scratch)


def test_a_narrower_mma_view_needs_a_narrower_swizzle():
    scratch = [tg.ACC((128, 128)), tg.SMEM((128, 64), F16, transforms=swizzled(128)),
               tg.SMEM((32, 128), F16, transforms=swizzled(128)), tg.Barrier(num_arrivals=2)]
    with raises_at("mma", "32 f16 = 64 bytes", "with a 64-byte swizzle", "declared with a 128-byte swizzle"):
        trace(loads_then_multiplies(lambda a: a.at[:, 0:32]), spec(128, 64), spec(64, 128), scratch=scratch)


def test_tcgen05_operands_are_checked_too():
    def body(x, out, acc, a, b):
        tg.tcgen05_mma(acc, a, b, accumulate=False)  # @tc

    scratch = [tg.TMEM((128, 128), F32), tg.SMEM((128, 64), F16, transforms=swizzled(128)),
               tg.SMEM((64, 128), F16, transforms=swizzled(32))]  # @b_smem
    with raises_at("tc", "tcgen05_mma reads operand B", "declared with a 32-byte swizzle") as err:
        trace(body, spec(128, 128), scratch=scratch)
    err.names("b_smem", "the buffer is declared at")
