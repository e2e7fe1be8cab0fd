"""The budget table on known cases: seed 002's A100 SGEMM walk-through and an H200 WGMMA design."""
import time

import pytest

from tilegemm.model import GemmConfig, Raster, budget

SEED_SHAPE = (4096, 4096, 4096)


def sgemm(tile_m, tile_n, tile_k=32):
    """Seed 002's SIMT designs: 256 threads (two warpgroups), double-buffered fp32 tiles."""
    return GemmConfig(tile_m, tile_n, tile_k, stages=2, instruction="fma", consumers=2, dtype="f32")


def hopper(stages=4, tile_n=256, **kw):
    """A warp-specialized 128 x tile_n x 64 WGMMA pipeline: two consumer warpgroups and a producer."""
    return GemmConfig(128, tile_n, 64, stages=stages, consumers=2, producers=1, **kw)


# ----------------------------------------------------------------------------- seed 002, A100 FP32


def test_seed_problem_layer_flops_bytes_intensity_and_floor():
    b = budget(sgemm(128, 128), SEED_SHAPE, device="a100")
    assert b.flops / 1e9 == pytest.approx(137.44, abs=0.01)
    assert b.min_bytes == 3 * 4096 * 4096 * 4                     # ~201 MB
    assert b.intensity == pytest.approx(684, rel=0.005)
    assert b.balance == pytest.approx(9.75)
    assert b.intensity > b.balance                                 # compute-bound
    assert b.compute_floor_s == pytest.approx(7.05e-3, rel=0.001)
    assert b.roofline_floor_s == b.compute_floor_s


def test_seed_128x128_tile_waves_tail_registers_and_residency():
    b = budget(sgemm(128, 128), SEED_SHAPE, device="a100")
    assert b.tiles == 1024
    assert b.waves == pytest.approx(9.48, abs=0.005)
    assert 1 - b.tail_efficiency == pytest.approx(0.05, abs=0.005)
    assert b.resources.mma_registers == 90                          # 64 outputs + 8 + 8 fragments + addresses
    assert b.resources.smem_bytes == 64 * 1024                     # two 16 KiB A + B stages
    assert b.blocks_per_sm == 2
    assert 1 / b.smem_bytes_per_flop == pytest.approx(32)           # on-chip FLOP per SMEM byte


def test_seed_64x64_tile_has_almost_no_tail_but_half_the_on_chip_intensity():
    b = budget(sgemm(64, 64), SEED_SHAPE, device="a100")
    assert b.tiles == 4096
    assert b.waves == pytest.approx(37.9, abs=0.05)
    assert b.tail_efficiency > 0.99
    assert 1 / b.smem_bytes_per_flop == pytest.approx(16)
    assert b.blocks_per_sm >= 4


def test_seed_128x64_tile_fits_three_blocks_with_a_small_tail():
    b = budget(sgemm(128, 64), SEED_SHAPE, device="a100")
    assert b.tiles == 2048
    assert b.waves == pytest.approx(18.96, abs=0.01)
    assert b.resources.smem_bytes == 48 * 1024
    assert 50 <= b.resources.mma_registers <= 55
    assert b.blocks_per_sm == 3
    assert b.tail_efficiency > 0.99


def test_small_problems_leave_sms_idle():
    b = budget(sgemm(128, 128), (512, 512, 4096), device="a100")
    assert b.tiles == 16
    assert b.tail_efficiency == pytest.approx(16 / 108)


# ----------------------------------------------------------------------------- H200, WGMMA


def test_h200_128x256_tiles_and_waves():
    b = budget(hopper(), (8192, 8192, 8192), device="h200")
    assert b.tiles == 64 * 32
    assert b.waves == pytest.approx(2048 / 132)
    assert b.tail_efficiency == pytest.approx((2048 / 132) / 16)


def test_h200_four_stage_pipeline_shared_memory_and_one_block_per_sm():
    b = budget(hopper(epilogue_tile=(64, 64), epilogue_buffers=4), (8192, 8192, 8192), device="h200")
    assert b.resources.smem_operand == 4 * (128 * 64 + 64 * 256) * 2 == 196608
    # the 64 B of mbarriers come first; every buffer starts at a 1 KiB boundary after them
    assert b.resources.smem_bytes == 1024 + 196608 + 4 * 64 * 64 * 2
    assert b.blocks_per_sm == 1 and b.occupancy_limit == "shared memory"
    assert b.legal


def test_over_227_kib_of_shared_memory_is_illegal():
    b = budget(hopper(stages=5), (8192, 8192, 8192), device="h200")
    assert b.resources.smem_bytes > 227 * 1024
    assert not b.legal
    assert "shared memory" in b.problems[0] and "227 KiB" in b.problems[0]
    assert "ILLEGAL" in b.table()


def test_an_accumulator_beyond_the_register_file_is_illegal():
    one_consumer = GemmConfig(128, 256, 64, stages=3, consumers=1)
    b = budget(one_consumer, (4096, 4096, 4096), device="h200")
    assert b.resources.acc_registers == 256
    assert any("registers per thread" in p for p in b.problems)
    assert budget(hopper(stages=3), (4096, 4096, 4096), device="h200").legal


def test_instructions_the_device_lacks_are_illegal():
    assert any("no wgmma" in p for p in budget(hopper(), (4096, 4096, 4096), device="b200").problems)
    assert any("no tcgen05" in p for p in budget(GemmConfig(128, 256, 64, instruction="tcgen05"),
                                                  (4096, 4096, 4096), device="h200").problems)


def test_prediction_is_bounded_by_the_roofline_and_the_measured_ceiling():
    b = budget(hopper(persistent=True, raster=Raster(0, 8)), (8192, 8192, 8192), device="h200")
    assert b.predicted_s > b.roofline_floor_s
    assert b.predicted_s >= b.flops / 720e12
    assert b.predicted_tflops < 720
    assert b.bound == "SM (MMA pipeline)"


def test_deeper_pipelines_hide_more_load_latency():
    shallow = budget(hopper(stages=2, tile_n=128, persistent=True), (8192, 8192, 8192), device="h200")
    deep = budget(hopper(stages=4, tile_n=128, persistent=True), (8192, 8192, 8192), device="h200")
    assert shallow.latency_efficiency < deep.latency_efficiency == 1.0
    assert deep.predicted_s < shallow.predicted_s


def test_a_persistent_block_multicasting_with_its_cluster_waits_for_each_tiles_first_stage():
    # a lone persistent block's producer runs ahead into its next tile: only its first tile waits for a load
    shape = (1500, 2504, 1000)
    alone = budget(hopper(tile_n=128, persistent=True), shape, device="h200")
    clustered = budget(hopper(tile_n=128, persistent=True, cluster=(4, 1), multicast=True), shape, device="h200")
    def tile_time_why(b):
        return next(row.why for row in b.rows if row.name == "tile time")
    assert "exposed fill + epilogue" in tile_time_why(clustered) and "exposed epilogue" in tile_time_why(alone)
    assert clustered.tile_time_s > alone.tile_time_s


def test_blocks_sharing_an_sm_hide_each_others_latency():
    one_per_sm = budget(hopper(stages=2, tile_n=128, persistent=True), (8192, 8192, 8192), device="h200")
    two_per_sm = budget(hopper(stages=2, tile_n=128), (8192, 8192, 8192), device="h200")
    assert two_per_sm.blocks_per_sm == 2 and two_per_sm.occupancy_limit == "registers"
    assert one_per_sm.latency_efficiency < two_per_sm.latency_efficiency == 1.0


def test_pingpong_consumers_hide_the_epilogue_and_hold_whole_tiles():
    shape = (8192, 8192, 8192)
    cooperative = budget(hopper(tile_n=192, persistent=True, epilogue_tile=(64, 64)), shape, device="h200")
    pingpong = budget(hopper(tile_n=192, persistent=True, epilogue_tile=(64, 64), acc_buffers=2), shape,
                      device="h200")
    assert pingpong.predicted_s < cooperative.predicted_s
    assert "exposed nothing" in dict((r.name, r.why) for r in pingpong.rows)["tile time"]
    # each ping-pong consumer holds the whole 128x192 f32 tile: 192 registers per thread instead of 96
    assert (cooperative.resources.acc_registers, pingpong.resources.acc_registers) == (96, 192)
    assert budget(hopper(tile_n=256, acc_buffers=2), shape, device="h200").problems  # 256 registers: illegal


def rows(b):
    """A budget's rows as {name: value}."""
    return {r.name: r.value for r in b.rows}


def test_a_lone_pingpong_warpgroup_stalls_when_its_last_group_cannot_cover_the_step():
    # one warpgroup issues at a time: at 128x128 its last 64x128 WGMMA group (0.19 us per K step) covers less
    # than the step's 0.22 us of bookkeeping, so ping-pong predicts slower than cooperative (as measured, run 11)
    shape = (8192, 8192, 8192)
    narrow = {s: budget(hopper(tile_n=128, persistent=True, epilogue_tile=(64, 64), acc_buffers=s), shape,
                        device="h200") for s in (1, 2)}
    assert narrow[2].predicted_s > narrow[1].predicted_s and rows(narrow[2])["lone issue"] != "0.00 us"
    wide = budget(hopper(tile_n=192, persistent=True, epilogue_tile=(64, 64), acc_buffers=2), shape, device="h200")
    assert rows(wide)["lone issue"] == "0.00 us" and "lone issue" not in rows(narrow[1])


def test_narrow_wgmma_tiles_run_out_of_shared_memory_bandwidth():
    narrow = budget(GemmConfig(128, 32, 64, stages=4, consumers=1), (4096, 4096, 4096), device="h200")
    wide = budget(GemmConfig(128, 128, 64, stages=4, consumers=1), (4096, 4096, 4096), device="h200")
    assert narrow.smem_efficiency < 1.0 == wide.smem_efficiency


def test_multicast_divides_the_shared_operand_traffic():
    alone = budget(hopper(), (8192, 8192, 8192), device="h200")
    paired = budget(hopper(cluster=(1, 2), multicast=True), (8192, 8192, 8192), device="h200")
    k = 8192
    assert alone.l2_bytes_per_tile == k * (128 + 256) * 2
    assert paired.l2_bytes_per_tile == k * (128 / 2 + 256) * 2


def test_two_cta_blocks_hold_half_of_b_and_tmem_holds_the_accumulators():
    b = budget(GemmConfig(128, 256, 64, stages=4, instruction="tcgen05", cluster=(2, 1), two_cta=True,
                          acc_buffers=2, epilogue_tile=(128, 64), epilogue_buffers=2),
               (8192, 8192, 8192), device="b200")
    assert b.resources.smem_operand == 4 * (128 * 64 + 64 * 128) * 2
    assert b.resources.tmem_columns == 512
    assert b.legal
    assert b.l2_bytes_per_tile == 8192 * (128 + 256 / 2) * 2


def test_every_row_says_why():
    b = budget(hopper(), (8192, 8192, 8192), device="h200")
    names = [r.name for r in b.rows]
    for expected in ("FLOPs", "min bytes", "intensity", "roofline floor", "smem / block", "registers / thread",
                     "blocks / SM", "waves", "tail efficiency", "L2->SM total", "DRAM traffic", "SMEM bandwidth",
                     "latency hiding", "predicted time"):
        assert expected in names
    assert all(r.why for r in b.rows)
    assert str(b) == b.table() and "8192x8192x8192 f16 -> f16 on NVIDIA H200" in str(b)


def test_configs_and_shapes_are_checked():
    with pytest.raises(ValueError, match="shape"):
        budget(hopper())
    with pytest.raises(ValueError, match="stages"):
        GemmConfig(128, 128, 64, stages=0)
    with pytest.raises(ValueError, match="instruction"):
        GemmConfig(128, 128, 64, instruction="hmma")
    with pytest.raises(ValueError, match="acc_buffers must be 1 .* or consumers=2"):
        hopper(acc_buffers=3)
    with pytest.raises(TypeError, match="GemmConfig"):
        budget("128x128", (1, 1, 1))
    for shape in [(2 ** 31 + 1, 128, 64), (128, 0, 64)]:
        with pytest.raises(ValueError, match=r"each extent must be 1 to 2147483648 \(2\^31\)"):
            budget(hopper(), shape)


def test_a_problem_as_large_as_int32_indices_reach_is_budgeted_in_bounded_time():
    start = time.perf_counter()
    huge = budget(hopper(tile_n=128), (2 ** 31, 136, 64))
    assert time.perf_counter() - start < 10  # the per-wave L2 model follows a bounded number of waves
    small = budget(hopper(tile_n=128), (2 ** 20, 136, 64))
    assert huge.dram_bytes / small.dram_bytes == pytest.approx(2 ** 11, rel=0.01)


def test_operand_layouts_count_tma_boxes_and_charge_no_time():
    shape = (8192, 8192, 8192)
    default = budget(hopper(), shape, device="h200")
    transposed = budget(hopper(a_layout="km", b_layout="nk"), shape, device="h200")
    assert rows(default)["operand layouts"] == "a mk, b kn" and rows(transposed)["operand layouts"] == "a km, b nk"
    why = {r.name: r.why for r in transposed.rows}["operand layouts"]
    assert "A [K, M] M-major: 2 TMA boxes per stage; B [N, K] K-major: 1 TMA box per stage" in why
    assert transposed.predicted_s == default.predicted_s
    assert "a km, b nk" in transposed.config.describe() and "a mk" not in default.config.describe()
    with pytest.raises(ValueError, match="b_layout one of"):
        hopper(b_layout="tn")


# ----------------------------------------------------------------------------- B200, tcgen05

BLACKWELL_SHAPE = (4096, 8192, 4096)


def blackwell(stages=4, **kw):
    """A 1-CTA 128x128x64 tcgen05 pipeline, one block per output tile, its epilogue in 128x64 slices."""
    return GemmConfig(128, 128, 64, stages=stages, instruction="tcgen05",
                      **{"epilogue_tile": (128, 64), "epilogue_buffers": 2, **kw})


def test_tcgen05_operand_streaming_never_beats_the_sms_share_of_l2_bandwidth():
    b = budget(blackwell(stages=16), BLACKWELL_SHAPE, device="b200")   # enough loads in flight for any latency
    share = b.device.l2_bw / b.device.sms
    assert b.latency_efficiency < 1.0                 # 128x128 MMAs need their operands faster than L2 gives them
    assert b.tile_time_s > b.l2_bytes_per_tile / share


def test_tcgen05_loads_in_flight_count_even_where_l2_bandwidth_binds():
    times = [budget(blackwell(stages=s), BLACKWELL_SHAPE, device="b200").predicted_s for s in (3, 4, 6, 8)]
    assert times == sorted(times, reverse=True) and len(set(times)) == 4


def test_a_tcgen05_issuer_waiting_for_its_previous_mma_keeps_one_load_fewer_in_flight():
    waits = budget(blackwell(release_delay=1), BLACKWELL_SHAPE, device="b200")
    free = budget(blackwell(), BLACKWELL_SHAPE, device="b200")
    assert "2 loads in flight" in rows_why(waits)["latency hiding"]
    assert "3 loads in flight" in rows_why(free)["latency hiding"]
    assert waits.predicted_s > free.predicted_s


def rows_why(b):
    """A budget's rows as {name: why}."""
    return {r.name: r.why for r in b.rows}


def test_tcgen05_epilogue_slices_overlap_tmem_reads_with_stores_and_two_accumulators_hide_it():
    whole = budget(blackwell(epilogue_tile=(128, 128), epilogue_buffers=1), BLACKWELL_SHAPE, device="b200")
    sliced = budget(blackwell(), BLACKWELL_SHAPE, device="b200")
    hidden = budget(blackwell(acc_buffers=2), BLACKWELL_SHAPE, device="b200")
    assert "one after the other" in rows_why(whole)["epilogue"]
    assert "overlapped over 2 slices" in rows_why(sliced)["epilogue"]
    assert rows(hidden)["epilogue"] == "overlapped"
    assert whole.predicted_s > sliced.predicted_s > hidden.predicted_s


def test_fp8_halves_the_operand_bytes_and_doubles_the_tensor_rate():
    shape = (8192, 8192, 8192)
    bf16 = budget(hopper(persistent=True, raster=Raster(0, 8), dtype="bf16"), shape, device="h200")
    fp8 = budget(GemmConfig(128, 256, 128, stages=4, consumers=2, producers=1, persistent=True, raster=Raster(0, 8),
                            dtype="e4m3", out_dtype="bf16"), shape, device="h200")
    assert not fp8.problems
    assert fp8.min_bytes == bf16.min_bytes - 2 * 8192 * 8192   # A and B at one byte an element, C still bf16
    assert fp8.compute_floor_s == pytest.approx(bf16.compute_floor_s / 2)
    assert 1.5 < bf16.predicted_s / fp8.predicted_s <= 2


def test_l2_traffic_counts_the_whole_lines_rows_that_start_mid_line_read():
    # B [K, N] with N = 5000: 10000-byte rows, seven of eight 128-byte box rows read two lines (RESULTS.md run 64)
    aligned, ragged = (budget(hopper(tile_n=192), (3072, n, 2048), device="h200") for n in (5120, 5000))
    assert ragged.l2_bytes_per_tile / aligned.l2_bytes_per_tile == pytest.approx((128 + 192 * 1.875) / (128 + 192))
    assert "B's rows start mid-line: x1.88 L2 lines" in str(ragged) and "mid-line" not in str(aligned)
    assert ragged.bound == "L2" and aligned.bound.startswith("SM")
