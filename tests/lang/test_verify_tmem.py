"""Verifier: TMEM loads and stores cover whole 32-lane quarters, and TMEM loads are waited for before use."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace

SCRATCH = [tg.TMEM((128, 64), F32), tg.SMEM((128, 64), F16)]


def epilogue(body):
    """Traces `body(acc_tmem, out_smem)` as a kernel over a 128x64 f32 TMEM accumulator and an SMEM tile."""
    return trace(lambda x, out, acc, smem: body(acc, smem), spec(128, 64), scratch=SCRATCH)


def test_a_tmem_load_used_after_its_wait_verifies():
    def body(acc, smem):
        part = tg.async_load_tmem(acc)
        tg.wait_load_tmem()
        smem[...] = part.astype(F16)
    epilogue(body)


def test_using_a_tmem_load_before_wait_load_tmem_is_rejected_at_the_use():
    def body(acc, smem):
        part = tg.async_load_tmem(acc)  # @load
        smem[...] = part.astype(F16)  # @use
        tg.wait_load_tmem()

    with raises_at("use", "astype uses the registers of the async_load_tmem at",
                   "hold the loaded values only after tcgen05.wait::ld",
                   "Call tg.wait_load_tmem() between the load and this use") as err:
        epilogue(body)
    err.names("load", "the load is at")


def test_a_wait_inside_a_when_does_not_cover_a_use_after_it():
    def body(acc, smem):
        part = tg.async_load_tmem(acc)

        @tg.when(tg.axis_index("x") == 0)
        def _():
            tg.wait_load_tmem()
        smem[...] = part.astype(F16)  # @after_when

    with raises_at("after_when", "uses the registers of the async_load_tmem"):
        epilogue(body)


def test_a_wait_inside_a_scope_covers_the_uses_after_it():
    def body(acc, smem):
        part = tg.async_load_tmem(acc)
        tg.run_scoped(lambda scratch: tg.wait_load_tmem(), tg.SMEM((8, 8), F16))
        smem[...] = part.astype(F16)
    epilogue(body)


def test_a_tmem_load_carried_into_a_loop_without_a_wait_is_rejected():
    def body(acc, smem):
        part = tg.async_load_tmem(acc)
        tg.fori_loop(0, 2, lambda i, carry: carry, part)  # @carried

    with raises_at("carried", "fori_loop uses the registers of the async_load_tmem"):
        epilogue(body)


@pytest.mark.parametrize("lanes", [slice(0, 64), slice(32, 128), slice(96, 128)])
def test_tmem_views_of_whole_32_lane_quarters_pass_the_quarter_rule_and_are_lowered_only_whole(lanes):
    def body(acc, smem):
        tg.async_load_tmem(acc.at[lanes])  # @quarters
        tg.wait_load_tmem()

    with raises_at("quarters", "cannot be lowered for sm_100a", "take views over all lanes and slice the columns"):
        epilogue(body)


@pytest.mark.parametrize("lanes, fragments", [
    (slice(16, 48), ["async_load_tmem of 32 TMEM lane(s) starting at lane 16"]),
    (slice(0, 48), ["async_load_tmem of 48 TMEM lane(s) starting at lane 0"]),
    (5, ["async_load_tmem of 1 TMEM lane(s) starting at lane 5"]),
])
def test_tmem_views_that_split_a_warps_quarter_are_rejected(lanes, fragments):
    def body(acc, smem):
        tg.async_load_tmem(acc.at[lanes])  # @quarter
        tg.wait_load_tmem()

    with raises_at("quarter", *fragments, "warp w only lanes [32w, 32w + 32)", "a multiple of 32 lanes"):
        epilogue(body)


def test_a_lane_start_not_provably_a_multiple_of_32_is_rejected():
    def body(acc, smem):
        row = tg.axis_index("x") * 16
        acc.at[tg.ds(row, 32)][...] = tg.zeros((32, 64), F32)  # @dynamic_store

    with raises_at("dynamic_store", "store of 32 TMEM lane(s) starting at a lane only known to be a multiple of 16"):
        epilogue(body)
