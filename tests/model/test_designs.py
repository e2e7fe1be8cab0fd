"""The model's terms for swap-AB, split-K, stream-K and batched designs: the main kernel budgeted in the MMA's frame
and as a batch of K slices writing f32 partials, the reduction (a second pass, or the last slices in the kernel), a
stream-K tail's rounds of slices, passes before the kernel, the streaming limit of few work units, the bandwidth
fraction."""
from dataclasses import replace

import pytest

import tilegemm as tg
from tilegemm.model import GemmConfig, budget, get_device
from tilegemm.model.designs import (PARTIAL_DTYPE, design_budget, fixup_s, memory_pass_s, padding_s,
                                    tile_operand_bytes)

H200 = get_device("h200")
DECODE = GemmConfig(64, 16, 64, stages=12, release_delay=1, consumers=2, producers=1, acc_buffers=2,
                    persistent=True, a_layout="mk", b_layout="nk")
DECODE_64 = replace(DECODE, tile_n=64)   # M = 64 tokens in one tile
CLASSIC = GemmConfig(128, 256, 64, stages=4, consumers=2, producers=1, persistent=True)


def test_swap_ab_budgets_the_transposed_problem():
    swapped = design_budget(DECODE, (16, 8192, 8192), swap_ab=True)
    assert swapped.gemm.shape == (8192, 16, 8192) and swapped.reduction_s == 0
    assert swapped.predicted_s == max(swapped.gemm.predicted_s, swapped.streaming_s)


def test_split_k_budgets_slices_writing_f32_partials_and_a_reduction_of_them():
    split = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=4, slice_rows=64)
    assert split.gemm.batch == 4 and split.gemm.shape == (4096, 16, 3584)
    assert split.gemm.config.out_dtype == PARTIAL_DTYPE
    assert split.reduction_bytes == 4 * 64 * 4096 * 4 + 16 * 4096 * 2   # partials read, C written
    assert split.reduction_s == pytest.approx(memory_pass_s(split.reduction_bytes, H200))
    assert split.predicted_s == pytest.approx(max(split.gemm.predicted_s, split.streaming_s) + split.reduction_s)


def test_a_split_summed_by_its_last_slices_moves_the_partials_twice_and_launches_nothing_more():
    second = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=4, slice_rows=64)
    last = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=4, slice_rows=64, in_kernel=True)
    assert last.reduction_bytes == 2 * 4 * 64 * 4096 * 4 + 16 * 4096 * 2   # partials written and read, C written
    assert last.reduction_s == pytest.approx(fixup_s(last.reduction_bytes, H200))
    assert last.reduction_s == pytest.approx(last.reduction_bytes / H200.bandwidth(measured=True))   # no launch
    assert last.gemm == second.gemm and last.predicted_s < second.predicted_s


def test_a_split_design_needs_the_workspace_rows_of_a_slice():
    with pytest.raises(ValueError, match="slice_rows >= M=16"):
        design_budget(DECODE, (16, 4096, 4096), swap_ab=True, split_k=2)


def test_fewer_work_units_than_sms_stream_no_faster_than_each_sm_loads():
    # 4096 rows of weight in 64-row tiles are 64 units: half the SMs, each loading its 64 rows of the weight and M's
    # columns of x over the whole K at one SM's rate
    few = design_budget(DECODE_64, (64, 4096, 14336), swap_ab=True)
    assert few.gemm.tiles == 64
    assert tile_operand_bytes(few.gemm) == 14336 * (64 + 64) * 2
    expected = tile_operand_bytes(few.gemm) / H200.sm_load_bw + H200.launch_overhead_s
    assert few.streaming_s == pytest.approx(expected) and few.predicted_s >= few.streaming_s
    assert few.streaming_s > few.gemm.dram_time_s + H200.launch_overhead_s   # slower than the device's DRAM bound
    # so a split summed by its last slices, which launches nothing more, pays for itself (as measured on the H200,
    # benchmarks/RESULTS.md run 114: 36.4 us plain, 34.5 split in two)
    assert design_budget(DECODE_64, (64, 4096, 14336), swap_ab=True, split_k=2, slice_rows=64,
                         in_kernel=True).predicted_s < few.predicted_s


def test_fewer_work_units_that_each_load_little_stream_at_the_devices_bandwidth():
    # at M = 16 the same 64 units load 14336 x (64 + 16) elements each: the DRAM bound binds, and a split only adds
    # its partials (run 114: 31.2 us plain, 31.3 split in two)
    few = design_budget(DECODE, (16, 4096, 14336), swap_ab=True)
    assert few.streaming_s == pytest.approx(few.gemm.dram_time_s + H200.launch_overhead_s)
    split = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=2, slice_rows=64, in_kernel=True)
    assert split.streaming_s + split.reduction_s > few.streaming_s


def test_a_tile_brings_in_only_the_rows_inside_the_problem():
    one_row = design_budget(DECODE, (1, 4096, 14336), swap_ab=True)   # M = 1 in a 16-wide tile: TMA fills 15
    assert tile_operand_bytes(one_row.gemm) == 14336 * (64 + 1) * 2


def test_splitting_k_pays_where_a_few_work_units_would_leave_most_sms_idle():
    # 1024 rows of weight are 16 units: 16 SMs cannot stream it at the device's bandwidth, 8 slices of K can
    few = design_budget(DECODE, (16, 1024, 14336), swap_ab=True)
    split = design_budget(DECODE, (16, 1024, 14336), swap_ab=True, split_k=8, slice_rows=64)
    assert few.gemm.tiles == 16 and split.predicted_s < few.predicted_s


def test_the_bandwidth_fraction_counts_the_bytes_the_problem_must_move():
    d = design_budget(DECODE, (1, 8192, 8192), swap_ab=True)
    must_move = (1 * 8192 + 8192 * 8192) * 2 + 8192 * 2
    assert d.min_bytes == must_move
    assert d.bandwidth_fraction == pytest.approx(must_move / d.predicted_s / H200.bandwidth(measured=True))
    assert 0 < d.bandwidth_fraction < 1


def test_without_swap_or_split_the_design_budget_is_the_kernels():
    config = GemmConfig(128, 192, 64, stages=4, consumers=2, producers=1, persistent=True)
    d = design_budget(config, (4096, 4096, 4096))
    assert d.gemm.predicted_s == budget(config, shape=(4096, 4096, 4096)).predicted_s
    assert d.reduction_bytes == 0 and d.reduction_s == 0 and d.batch == 1 and d.main_s is None
    assert "split-K" not in d.describe() and "swap-AB" not in d.describe()
    assert d.out_dtype == tg.float16


def test_a_pass_of_its_own_moves_its_bytes_at_the_measured_copy_bandwidth_plus_a_launch():
    assert H200.bandwidth(measured=True) != H200.bandwidth()   # the datasheet's figure is not the one used
    assert memory_pass_s(10**9, H200) == pytest.approx(10**9 / H200.bandwidth(measured=True)
                                                       + H200.launch_overhead_s)


def test_padding_block_scales_is_one_pass_per_array_reading_its_rows_and_writing_them_padded():
    one = memory_pass_s(1000 * (10 + 12) * 4, H200)   # 1000 rows of 10 float32 read, 1000 of 12 written
    assert padding_s([(1000, 10, 12)], H200) == pytest.approx(one)
    assert padding_s([(1000, 10, 12), (1000, 10, 12)], H200) == pytest.approx(2 * one)   # a launch each


def test_a_pass_before_the_kernel_adds_its_time_and_says_so():
    plain = design_budget(CLASSIC, (4096, 4096, 4096))
    padded = replace(plain, prepass_s=3e-6)
    assert padded.predicted_s == pytest.approx(plain.predicted_s + 3e-6)
    assert "block scales padded first 3.00 us" in padded.describe()
    assert "padded" not in plain.describe()


def test_the_description_names_each_part_of_a_design_the_outermost_first():
    swapped = design_budget(DECODE, (16, 4096, 14336), swap_ab=True)
    split = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=2, slice_rows=64)
    tail = design_budget(CLASSIC, (3000, 5000, 2000), stream_k=2)
    padded = replace(tail, prepass_s=1e-6)

    def parts(d):
        return d.describe().split(": ", 1)[1].split("; ")

    assert split.describe().startswith(f"{split.predicted_s * 1e6:.2f} us predicted ({split.gemm.bound}-bound")
    assert parts(swapped)[:1] == ["swap-AB (C^T = B^T A^T)"]
    assert parts(split)[:2] == [f"split-K x2 + reduction {split.reduction_s * 1e6:.2f} us", "swap-AB (C^T = B^T A^T)"]
    assert parts(tail)[:1] == [f"stream-K tail x2 + reduction {tail.reduction_s * 1e6:.2f} us"]
    assert parts(padded)[:2] == ["block scales padded first 1.00 us", parts(tail)[0]]
    assert parts(swapped)[1:] == parts(split)[2:] == [DECODE.describe()] and parts(tail)[1:] == [CLASSIC.describe()]


def test_a_batch_is_one_launch_of_its_gemms_moving_each_ones_bytes():
    one = design_budget(CLASSIC, (1024, 1024, 1024))
    two = design_budget(CLASSIC, (1024, 1024, 1024), batch=2)
    assert two.batch == two.gemm.batch == 2 and two.gemm.shape == two.shape == (1024, 1024, 1024)
    assert two.min_bytes == 2 * one.min_bytes
    assert two.gemm.tiles == 2 * one.gemm.tiles


def test_a_batch_split_over_k_is_refused():
    with pytest.raises(ValueError, match="a batch of 2 GEMMs split over K is not a design tilegemm builds"):
        design_budget(CLASSIC, (1024, 1024, 4096), batch=2, split_k=2, slice_rows=1024)


def test_a_split_moves_the_bytes_of_one_gemm_whatever_its_slices():
    whole = design_budget(DECODE, (16, 4096, 14336), swap_ab=True)
    split = design_budget(DECODE, (16, 4096, 14336), swap_ab=True, split_k=4, slice_rows=64)
    assert split.batch == 1 and split.stream_k == 1
    assert split.min_bytes == whole.min_bytes == (16 * 14336 + 14336 * 4096) * 2 + 16 * 4096 * 2


def test_a_stream_k_tail_runs_the_last_rounds_tiles_as_k_slices_over_every_sm():
    # 3000 x 5000 in 128 x 256 tiles is 24 x 20 = 480 tiles: three whole rounds over the H200's 132 SMs and 84 tiles
    # left, which in 3 K slices each are 252 slices: two rounds of slices, each a third of a tile's time
    shape, split = (3000, 5000, 2000), 3
    tail = design_budget(CLASSIC, shape, stream_k=split)
    whole, sliced = budget(CLASSIC, shape=shape), budget(CLASSIC, shape=(3000, 5000, 667))
    assert (H200.sms, whole.tiles) == (132, 480)
    assert tail.stream_k == split and tail.split_k == 1 and not tail.swap_ab and tail.gemm == whole
    sm_s = 3 * whole.tile_time_s + 2 * sliced.tile_time_s
    assert tail.main_s == pytest.approx(max(sm_s, whole.dram_time_s, whole.l2_time_s) + H200.launch_overhead_s)
    # the 84 tail tiles' f32 partials written and read back, and their tiles of C written, in a pass of their own
    assert tail.reduction_bytes == 84 * 128 * 256 * (2 * split * 4 + 2)
    assert tail.reduction_s == pytest.approx(memory_pass_s(tail.reduction_bytes, H200))
    assert tail.predicted_s == pytest.approx(max(tail.main_s, tail.streaming_s) + tail.reduction_s)
    halves = design_budget(CLASSIC, shape, stream_k=2)   # the least split is a stream-K design too
    assert halves.stream_k == 2 and halves.reduction_bytes == 84 * 128 * 256 * (2 * 2 * 4 + 2)


def test_a_stream_k_tail_over_a_grid_of_its_own_deals_slices_to_that_grid():
    grid = replace(CLASSIC, grid_blocks=100)   # 480 tiles: 4 rounds of 100 and 80 left, 240 slices in 3 rounds
    tail = design_budget(grid, (3000, 5000, 2000), stream_k=3)
    whole, sliced = budget(grid, shape=(3000, 5000, 2000)), budget(grid, shape=(3000, 5000, 667))
    sm_s = 4 * whole.tile_time_s + 3 * sliced.tile_time_s
    assert tail.main_s == pytest.approx(max(sm_s, whole.dram_time_s, whole.l2_time_s) + H200.launch_overhead_s)
    assert tail.reduction_bytes == 80 * 128 * 256 * (2 * 3 * 4 + 2)
