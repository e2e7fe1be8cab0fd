"""The model's terms for swap-AB and split-K designs: the main kernel budgeted in the MMA's frame and as a batch of
K slices writing f32 partials, the reduction (a second pass, or the last slices in the kernel), the streaming limit of
few work units, the bandwidth fraction."""
from dataclasses import replace

import pytest

import tilegemm as tg
from tilegemm.model import GemmConfig, budget, get_device
from tilegemm.model.designs import PARTIAL_DTYPE, design_budget, fixup_s, memory_pass_s, tile_operand_bytes

H200 = get_device("h200")
DECODE = GemmConfig(64, 16, 64, stages=12, release_delay=1, consumers=2, producers=1, acc_buffers=2,
                    persistent=True, a_layout="mk", b_layout="nk")
DECODE_64 = replace(DECODE, tile_n=64)   # M = 64 tokens in one tile


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
    assert "split-K" not in d.describe() and "swap-AB" not in d.describe()
    assert d.out_dtype == tg.float16
