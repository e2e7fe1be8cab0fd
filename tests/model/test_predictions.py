"""The model's absolute predictions, derived by hand from the formulas in tilegemm/model/budget.py.

Each test writes the derivation out from the H200 sheet (tilegemm/model/devices.py):
132 SMs, a measured 720 TFLOP/s tensor ceiling (per SM: 720e12 / 132), 12 TB/s
from L2 to the SMs, a measured 4.3 TB/s DRAM, L2 hits at 0.4 us and misses at
1.0 us, 3 us per launch. A factor slipped into any term moves a prediction
away from its derivation.
"""
import dataclasses
import math

import pytest

from tilegemm.model import GemmConfig, Raster, budget

PER_SM_FLOPS = 720e12 / 132          # the measured ceiling shared by the 132 SMs
L2_TO_SM = 12e12 / 132               # bytes/s one SM draws from L2 (the exposed epilogue's rate)
DRAM = 4.3e12
LAUNCH = 3e-6


def mma_seconds(tile_m, tile_n, k):
    """One tile's MMAs on one SM at the measured ceiling."""
    return 2 * tile_m * tile_n * k / PER_SM_FLOPS


def first_fill(b):
    """One load's latency at the budget's L2 miss rate: what a persistent block waits once, for its first stage
    (its later tiles load while the one before ends)."""
    return b.l2_miss_rate * 1.0e-6 + (1 - b.l2_miss_rate) * 0.4e-6


def flagship():
    """The flagship's design: 128x192x64, 4 stages released a step late, 2 ping-pong consumers + 1 producer,
    one persistent block per SM in a width-8 planar snake, 64x64 epilogue tiles x4, setmaxnreg 240/24."""
    return GemmConfig(128, 192, 64, stages=4, release_delay=1, consumers=2, producers=1, persistent=True,
                      grid_blocks=132, raster=Raster(0, 8), epilogue_tile=(64, 64), epilogue_buffers=4,
                      acc_buffers=2, max_registers=(240, 24))


def test_the_flagship_at_8192_cubed_takes_21_rounds_of_one_unhidden_mma_tile():
    b = budget(flagship(), (8192, 8192, 8192), device="h200")
    # 64 x ceil(8192 / 192) = 64 x 43 = 2752 tiles over 132 persistent blocks: ceil(20.85) = 21 rounds
    assert b.tiles == 2752 and b.waves == pytest.approx(2752 / 132)
    # a 64x192 WGMMA per consumer reads (64 + 192) x 2 B per 2 x 64 x 192 FLOP = 20.8 mB/FLOP, under the SM's
    # 128 B/clk / (989.4 TFLOP/s / 132 / 1.83 GHz) = 31.3 mB/FLOP: full speed
    assert b.smem_efficiency == 1.0
    # 2 stages in flight (4 - 1 - release delay 1) cover 128 K steps of at most 1 us latency in 64 us, less than
    # the 73.8 us of MMA; ping-pong hides the epilogue and a persistent block fills once, not per tile; the last of
    # the two 64-row WGMMA groups (73.8 us / 128 steps / 2 = 0.29 us) covers the 0.22 us step overhead: no
    # lone-issue gap
    tile = mma_seconds(128, 192, 8192)
    assert tile == pytest.approx(73.82e-6, rel=1e-4)
    assert b.tile_time_s == pytest.approx(tile, rel=1e-12)
    sm = first_fill(b) + 21 * tile
    assert b.sm_time_s == pytest.approx(sm, rel=1e-12)
    # the L2 bound: every tile reads (128 + 192) x 8192 f16 operand elements, plus C once, at 12 TB/s
    l2_bytes = 2752 * (128 + 192) * 8192 * 2 + 8192 * 8192 * 2
    assert b.l2_bytes == l2_bytes and b.l2_time_s == pytest.approx(l2_bytes / 12e12)
    assert b.dram_time_s < b.l2_time_s < b.sm_time_s and b.bound == "SM (MMA pipeline)"
    assert b.predicted_s == pytest.approx(sm + LAUNCH, rel=1e-12)             # 1.553 ms
    assert b.predicted_tflops == pytest.approx(2 * 8192 ** 3 / (sm + LAUNCH) / 1e12)   # 707.7


def test_a_persistent_grid_smaller_than_the_gpu_takes_rounds_of_its_own_size():
    c = GemmConfig(128, 128, 64, stages=4, consumers=2, producers=1, persistent=True, grid_blocks=66,
                   epilogue_tile=(64, 64), epilogue_buffers=2)
    b = budget(c, (4096, 4096, 4096), device="h200")
    # 32 x 32 = 1024 tiles over 66 blocks (66 SMs busy, 66 idle): ceil(15.5) = 16 rounds, not ceil(7.76) = 8
    assert b.tiles == 1024 and b.tail_efficiency == pytest.approx((1024 / 132) / 16)
    # 3 stages in flight hide 64 K steps of <= 1 us latency (21 us) under 24.6 us of MMA; one accumulator per
    # consumer leaves the 128x128 f16 epilogue exposed: 32 KiB at 12 TB/s / 132 SMs
    tile = mma_seconds(128, 128, 4096) + 128 * 128 * 2 / L2_TO_SM
    assert b.tile_time_s == pytest.approx(tile, rel=1e-12)
    assert b.sm_time_s == pytest.approx(first_fill(b) + 16 * tile, rel=1e-12)
    assert b.bound == "SM (MMA pipeline)"
    assert b.predicted_s == pytest.approx(first_fill(b) + 16 * tile + LAUNCH, rel=1e-12)
    full_grid = budget(dataclasses.replace(c, grid_blocks=None), (4096, 4096, 4096), device="h200")
    assert full_grid.sm_time_s == pytest.approx(first_fill(full_grid) + 8 * tile, rel=1e-12)   # 132 blocks: 8 rounds


def test_a_grid_of_fewer_tiles_than_sms_takes_one_round_with_its_load_fill_and_epilogue_exposed():
    # 2048 x 1024 with 128x256 tiles: 16 x 4 = 64 one-shot blocks, each on its own SM (one round)
    c = GemmConfig(128, 256, 64, stages=4, consumers=2, producers=1, epilogue_tile=(64, 64), epilogue_buffers=4)
    b = budget(c, (2048, 1024, 2048), device="h200")
    assert b.tiles == 64 and b.tail_efficiency == pytest.approx(64 / 132)
    # every A and B panel fits in L2 (A 8 MiB, B 4 MiB): DRAM reads each once, so the operand miss rate is
    # (A + B) / (64 tiles x (128 + 256) x 2048 x 2 B) and a load waits 0.4 us + miss x 0.6 us
    operands = (2048 * 2048 + 2048 * 1024) * 2
    miss = operands / (64 * (128 + 256) * 2048 * 2)
    latency = 0.4e-6 + miss * 0.6e-6
    assert b.l2_miss_rate == pytest.approx(miss)
    # 3 loads in flight hide 32 K steps of latency (~4.5 us) under 24.6 us of MMA; the block pays one load (fill)
    # and its 64 KiB epilogue
    tile = mma_seconds(128, 256, 2048) + latency + 128 * 256 * 2 / L2_TO_SM
    assert b.tile_time_s == pytest.approx(tile, rel=1e-12)
    assert b.predicted_s == pytest.approx(tile + LAUNCH, rel=1e-12)


def test_a_short_k_problem_is_dram_bound_at_the_measured_bandwidth():
    # 8192 x 8192 x 64: C (128 MiB) dominates the bytes; A and B (1 MiB each) stay in L2, so DRAM moves each
    # operand panel once and C once
    c = GemmConfig(128, 128, 64, stages=4, consumers=2, producers=1, persistent=True, epilogue_tile=(64, 64),
                   epilogue_buffers=2)
    b = budget(c, (8192, 8192, 64), device="h200")
    dram_bytes = (8192 * 64 + 64 * 8192) * 2 + 8192 * 8192 * 2
    assert b.dram_bytes == dram_bytes
    assert b.dram_time_s == pytest.approx(dram_bytes / DRAM)
    # the SM bound: the first fill, then ceil(4096 tiles / 132) = 32 rounds of one K step of MMA (its load
    # latency, over 3 loads in flight, is shorter) plus the exposed epilogue
    tile = mma_seconds(128, 128, 64) + 128 * 128 * 2 / L2_TO_SM
    assert b.sm_time_s == pytest.approx(first_fill(b) + math.ceil(4096 / 132) * tile, rel=1e-12)
    assert b.sm_time_s < b.dram_time_s and b.bound == "DRAM"
    assert b.predicted_s == pytest.approx(dram_bytes / DRAM + LAUNCH, rel=1e-12)


def test_the_roofline_rows_quote_the_datasheet():
    b = budget(flagship(), (8192, 8192, 8192), device="h200")
    flops, min_bytes = 2 * 8192 ** 3, 3 * 8192 * 8192 * 2
    assert (b.flops, b.min_bytes) == (flops, min_bytes)
    assert b.compute_floor_s == pytest.approx(flops / 989.4e12) and b.memory_floor_s == pytest.approx(min_bytes / 4.8e12)
    assert b.roofline_floor_s == b.compute_floor_s and b.balance == pytest.approx(989.4e12 / 4.8e12)


def test_on_hopper_fma_issue_shares_the_four_issue_slots_with_loads_and_loop_overhead():
    # H200 FP32: 66.9 TFLOP/s / (2 FLOP x 32 lanes x 132 SMs x 1.83 GHz) = 4.33 warp FMAs per clock, more than the
    # 4 issue slots: FMAs alone would fill them. A 128x128 tile over 256 threads gives each 64 outputs as an 8x8
    # thread tile, whose K step also issues 8/4 + 8/4 fragment loads and 3 loop instructions: 7 per 64 FMAs
    c = GemmConfig(128, 128, 32, stages=2, instruction="fma", consumers=2, dtype="f32")
    b = budget(c, (4096, 4096, 4096), device="h200")
    assert b.issue_efficiency == pytest.approx(1 / (1 + 7 / 64))
    # A100: 19.5 TFLOP/s / (2 x 32 x 108 x 1.41 GHz) = 2.0 warp FMAs per clock leave room for the rest
    assert budget(c, (4096, 4096, 4096), device="a100").issue_efficiency == 1.0


def test_shared_memory_and_registers_are_legal_up_to_their_limits_exactly():
    # 4 mbarriers (32 B, padded to the first 1 KiB boundary), 4 stages of 128x64 + 64x192 f16 operands (160 KiB)
    # and a 1x33792 f16 epilogue tile (66 KiB): 232448 B, exactly the 227 KiB a block may use
    c = GemmConfig(128, 192, 64, stages=4, epilogue_tile=(1, 33792))
    at_limit = budget(c, (8192, 8192, 8192), device="h200")
    assert at_limit.resources.smem_bytes == 227 * 1024 and at_limit.legal
    over = budget(dataclasses.replace(c, epilogue_tile=(1, 33793)), (8192, 8192, 8192), device="h200")
    assert [p for p in over.problems if "shared memory" in p]
    full = budget(GemmConfig(128, 128, 64, max_registers=(255, 40)), (4096, 4096, 4096), device="h200")
    assert full.resources.mma_registers == 255 and full.legal
    spill = budget(GemmConfig(128, 128, 64, max_registers=(256, 40)), (4096, 4096, 4096), device="h200")
    assert any("256 registers per thread" in p for p in spill.problems)
    eight_warpgroups = GemmConfig(128, 128, 64, consumers=2, producers=6)
    assert budget(eight_warpgroups, (4096, 4096, 4096), device="h200").resources.threads == 1024
    assert not [p for p in budget(eight_warpgroups, (4096, 4096, 4096), device="h200").problems if "threads" in p]
    assert [p for p in budget(dataclasses.replace(eight_warpgroups, producers=7), (4096, 4096, 4096),
                              device="h200").problems if "1024 limit" in p]


def why(b, name):
    return {r.name: r.why for r in b.rows}[name]


def test_the_latency_row_counts_blocks_per_sm_only_when_several_share_one():
    one = budget(flagship(), (8192, 8192, 8192), device="h200")
    two = budget(GemmConfig(128, 128, 64, stages=2, consumers=2, producers=1), (8192, 8192, 8192), device="h200")
    assert "blocks per SM" not in why(one, "latency hiding")
    assert two.blocks_per_sm == 2 and why(two, "latency hiding").endswith(", 2 blocks per SM")


def test_the_smem_bandwidth_row_says_how_each_instruction_reads_its_operands():
    tcgen05 = budget(GemmConfig(128, 256, 64, instruction="tcgen05"), (4096, 4096, 4096), device="b200")
    pair = budget(GemmConfig(128, 256, 64, instruction="tcgen05", cluster=(2, 1), two_cta=True), (4096, 4096, 4096),
                  device="b200")
    assert why(tcgen05, "SMEM bandwidth").startswith("tcgen05 reads A and B once per K step;")
    assert why(pair, "SMEM bandwidth").startswith("tcgen05 reads A and B once per K step (B split over the 2-CTA pair)")
    assert why(budget(flagship(), (8192, 8192, 8192), device="h200"), "SMEM bandwidth").startswith(
        "wgmma 64x192 per warpgroup re-reads B (192 wide) for every 64 rows")
    fma = budget(GemmConfig(128, 64, 32, instruction="fma", dtype="f32"), (4096, 4096, 4096), device="a100")
    assert why(fma, "SMEM bandwidth").startswith("128x64 block tile reads tile_m + tile_n elements")
