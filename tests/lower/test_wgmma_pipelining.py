"""Serialized WGMMAs: read off the SASS, and reported as a tg.PerformanceWarning naming the user's wgmma line."""
import pytest

import tilegemm as tg
from tilegemm.lower import binutils, memory_clear
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import blockscaling, hopper_matmul

from . import kernels

# One K step of two 64x192 accumulators (8 WGMMAs in one group, PTX `wgmma.commit_group` once), as ptxas
# 13 emitted it for the ping-pong flagship: pipelined in f16, serialized in bf16 with one 128-row ACC.
PTX_ONE_GROUP = "wgmma.fence.sync.aligned;\n" + "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 ...;\n" * 8 \
    + "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;\n"
PIPELINED = "\n".join(["WARPGROUP.ARRIVE ;"]
                      + ["HGMMA.64x192x16.F32 R120, gdesc[UR12].tnspB, R120 ;",
                         "HGMMA.64x192x16.F32 R24, gdesc[UR12].tnspB, R24 ;"] * 3
                      + ["HGMMA.64x192x16.F32 R120, gdesc[UR12].tnspB, R120 ;",
                         "HGMMA.64x192x16.F32 R24, gdesc[UR12].tnspB, R24, gsb0 ;",
                         "WARPGROUP.DEPBAR.LE gsb0, 0x1 ;"])
SERIALIZED = "\n".join(["WARPGROUP.ARRIVE ;"]
                       + ["HGMMA.64x192x16.F32.BF16 R120, gdesc[UR8].tnspB, R120, gsb0 ;",
                          "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;", "WARPGROUP.ARRIVE ;",
                          "HGMMA.64x192x16.F32.BF16 R24, gdesc[UR8].tnspB, R24, gsb0 ;",
                          "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;", "WARPGROUP.ARRIVE ;"] * 4)


def test_a_group_whose_every_hgmma_waits_is_serialized():
    assert not binutils.serialized_wgmma(PTX_ONE_GROUP, PIPELINED)
    assert binutils.serialized_wgmma(PTX_ONE_GROUP, SERIALIZED)


def test_groups_of_one_wgmma_are_not_serialized():
    ptx = "wgmma.mma_async ...;\nwgmma.commit_group.sync.aligned;\n" * 2
    assert not binutils.serialized_wgmma(ptx, "HGMMA.64x64x16.F32 R24, gdesc[UR4], R24, gsb0 ;\n" * 2)


needs_sass = pytest.mark.skipif(binutils.find_tool("nvdisasm") is None, reason="needs nvdisasm to read SASS")


@needs_sass
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
@pytest.mark.parametrize("schedule,tile_n", [("cooperative", 128), ("cooperative", 192), ("cooperative", 256),
                                             ("pingpong", 192)])
def test_every_flagship_configuration_keeps_its_wgmmas_in_flight(schedule, tile_n, dtype):
    lowered = hopper_matmul.build(2048, 2048, 2048, dtype=dtype, tile_n=tile_n, schedule=schedule).lower(
        tg.ShapeDtype((2048, 2048), dtype), tg.ShapeDtype((2048, 2048), dtype), arch="sm_90a")
    assert lowered.compile().meta["wgmma_serialized"] is False


@needs_sass
@pytest.mark.parametrize("schedule,tile_n,dtype", [("pingpong", 192, tg.bfloat16), ("cooperative", 256, tg.float16)],
                         ids=["pingpong-192-bf16", "cooperative-256-f16"])
@pytest.mark.parametrize("a_layout,b_layout", [("mk", "nk"), ("km", "kn"), ("km", "nk")])
def test_operands_stored_either_way_round_keep_the_flagships_wgmmas_in_flight(a_layout, b_layout, schedule, tile_n,
                                                                              dtype):
    lowered = hopper_matmul.build(2048, 2048, 2048, dtype=dtype, tile_n=tile_n, schedule=schedule, a_layout=a_layout,
                                  b_layout=b_layout).lower(*operand_specs(2048, 2048, 2048, dtype, a_layout, b_layout),
                                                           arch="sm_90a")
    assert lowered.compile().meta["wgmma_serialized"] is False


@needs_sass
def test_a_serialized_kernel_warns_at_compile_naming_its_wgmma_line(monkeypatch, tmp_path):
    monkeypatch.setattr(binutils, "serialized_wgmma", lambda ptx, sass: True)   # as ptxas does under pressure
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))                       # a fresh compile, not a cached one
    memory_clear()
    lowered = kernels.tma_wgmma().lower(*kernels.two_row_specs())
    with pytest.warns(tg.PerformanceWarning, match=r"kernels\.py:\d+: ptxas serialized the WGMMAs .* C7514"):
        lowered.compile()
    memory_clear()
    with pytest.warns(tg.PerformanceWarning, match="serialized"):   # and again when it comes from the disk cache
        lowered.compile()
    assert lowered.cache_hit == "disk"
    memory_clear()


def test_fp8_wgmmas_serialized_are_seen_too():
    ptx = "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 ...;\n" * 4 + "wgmma.commit_group.sync.aligned;\n"
    qgmma = "QGMMA.64x128x32.F32.E4M3.E4M3 R88, gdesc[UR24], R88{} ;\n"
    assert not binutils.serialized_wgmma(ptx, qgmma.format("") * 3 + qgmma.format(", gsb0"))
    assert binutils.serialized_wgmma(ptx, (qgmma.format(", gsb0") + "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n") * 4)


@needs_sass
def test_the_block_scaled_k_loop_keeps_its_wgmmas_in_flight():
    # its promotion reads the partial of the step before while the next step's WGMMAs run; ptxas serialized
    # that in a loop carrying a WGMMA across iterations (benchmarks/RESULTS.md run 82), so its loop waits for
    # every WGMMA each two steps
    m, n, k = 512, 512, 2048
    scales = blockscaling.BlockScales()
    lowered = hopper_matmul.build(m, n, k, dtype=tg.float8_e4m3fn, tile_n=128, tile_k=128, schedule="cooperative",
                                  a_layout="mk", b_layout="nk", block_scales=scales).lower(
        *operand_specs(m, n, k, tg.float8_e4m3fn, "mk", "nk"), *scales.specs(m, n, k), arch="sm_90a")
    assert lowered.compile().meta["wgmma_serialized"] is False
