"""Verifier: each per-block budget admits exactly its limit, and array work is rejected only inside a core_map."""
import pytest

import tilegemm as tg
from tilegemm.lang.rules.budgets import kib

from .helpers import F16, spec, trace
from .test_verify_budgets import allocate


def test_eight_warpgroups_fill_a_block_of_1024_threads():
    graph = trace(lambda x, out: None, spec(128, 128), num_threads=8)
    assert graph.config["num_threads"] == 8


def test_accumulators_of_exactly_255_registers_per_thread_verify():
    allocate(tg.ACC((64, 256)), tg.ACC((64, 254)))      # 128 + 127 registers per CUDA thread


def test_a_budget_error_lists_the_three_largest_allocations():
    with pytest.raises(tg.KernelError) as err:
        allocate(*[tg.SMEM((64 * 1024 - 512 * i,), F16) for i in range(4)])
    assert [what.split()[0:2] for what, _ in err.value.related] == [["128", "KiB"], ["127", "KiB"], ["126", "KiB"]]


@pytest.mark.parametrize("nbytes, text", [(1023, "1023 bytes"), (1024, "1 KiB"), (66048, "64.5 KiB"),
                                          (227 * 1024, "227 KiB")])
def test_budget_messages_give_sizes_in_kib_from_one_kib(nbytes, text):
    assert kib(nbytes) == text


def test_array_work_after_a_core_map_is_outside_it():
    def body(x, out, bar):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            tg.barrier_arrive(bar.at[0])
        out[...] = x[...]

    graph = trace(body, spec(128, 128), scratch=[tg.Barrier(num_arrivals=4)])   # each of the 4 warps arrives
    assert [op.kind for op in graph.body.ops][-2:] == ["load", "store"]


def test_warpgroup_wide_ops_without_array_results_are_rejected_inside_a_core_map_too():
    def body(x, out):
        @tg.core_map(tg.WarpMesh(axis_name="warp"))
        def _():
            tg.wgmma_wait(0)

    with pytest.raises(tg.KernelError, match="wgmma_wait is warpgroup-wide array work and cannot run inside a WarpMesh "
                                             "core_map"):
        trace(body, spec(128, 128))
