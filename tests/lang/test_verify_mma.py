"""Verifier: WGMMA and tcgen05 shapes, dtypes, 2-CTA rules and tensor-core barriers."""
import pytest

import tilegemm as tg

from .helpers import BF16, F16, F32, raises_at, spec, swizzled, trace


def smem(rows, cols, dtype=F16):
    """An MMA operand buffer with the swizzle its minor dimension calls for (none when nothing fits)."""
    swizzle = next((s for s in (128, 64, 32) if cols * dtype.itemsize % s == 0), None)
    return tg.SMEM((rows, cols), dtype, transforms=swizzled(swizzle, dtype) if swizzle else ())


def wgmma_of(acc, a, b):
    """Traces a kernel issuing one wgmma(acc, a, b) on the given scratch specs."""
    def body(x, out, acc_ref, a_ref, b_ref):
        tg.wgmma(acc_ref, a_ref, b_ref)  # @wgmma
        tg.wgmma_wait(0)
    return trace(body, spec(128, 128), scratch=[acc, a, b])


def test_wgmma_of_a_legal_tile_verifies():
    graph = wgmma_of(tg.ACC((128, 128)), smem(128, 64), smem(64, 128))
    assert [op.kind for op in graph.walk()].count("wgmma") == 1


PAIRS = "A and B both f16, both bf16 or each one of e4m3, e5m2"   # the operand types WGMMA takes together


@pytest.mark.parametrize("acc, a, b, fragments", [
    (tg.ACC((96, 128)), smem(96, 64), smem(64, 128), ["M=96", "M must be a multiple of 64 (e.g. 64 or 128)"]),
    (tg.ACC((64, 180)), smem(64, 64), smem(64, 180),
     ["wgmma N=180", "N must be a multiple of 8 between 8 and 256, e.g. 176 or 184"]),
    (tg.ACC((64, 264)), smem(64, 64), smem(64, 264), ["N must be a multiple of 8 between 8 and 256, e.g. 256"]),
    (tg.ACC((64, 128)), smem(64, 24), smem(24, 128), ["K is 24", "must be a multiple of 16 (e.g. 16 or 32)"]),
    (tg.ACC((64, 128)), smem(64, 64), smem(64, 128, BF16), ["f16 and bf16", PAIRS]),
    (tg.ACC((64, 128)), smem(64, 32, F32), smem(32, 128, F32), ["f32 and f32", PAIRS]),
    (tg.ACC((64, 128), BF16), smem(64, 64, BF16), smem(64, 128, BF16), ["bf16 accumulator", "legal accumulators: f32"]),
])
def test_wgmma_rejects_illegal_shapes_and_dtypes(acc, a, b, fragments):
    with raises_at("wgmma", *fragments):
        wgmma_of(acc, a, b)


def test_a_wgmma_a_operand_in_registers_is_refused_naming_where_a_must_live():
    def body(x, out, a_smem, b_smem, acc):
        tg.wgmma(acc, a_smem[...] * 2.0, b_smem)  # @register_a

    with raises_at("register_a", "wgmma A operand is a register array; tilegemm lowers wgmma.mma_async with A in "
                   "SMEM: store A into an SMEM buffer"):
        trace(body, spec(128, 128), scratch=[smem(64, 64), smem(64, 32), tg.ACC((64, 32))])


def test_wgmma_accepts_an_f16_accumulator_for_f16_inputs():
    wgmma_of(tg.ACC((64, 128), F16), smem(64, 64), smem(64, 128))


def tcgen05_of(acc, a, b, *barrier, collective_axis=None, **config):
    """Traces a kernel issuing one tcgen05_mma, arriving on `barrier` when one is given."""
    def body(x, out, acc_ref, a_ref, b_ref, *bars):
        done = bars[0].at[0] if bars else None
        tg.tcgen05_mma(acc_ref, a_ref, b_ref, done, accumulate=False, collective_axis=collective_axis)  # @tcgen05
    return trace(body, spec(128, 128), scratch=[acc, a, b, *barrier], **config)


def test_tcgen05_of_legal_tiles_verifies():
    tcgen05_of(tg.TMEM((128, 256), F32), smem(128, 64), smem(64, 256))
    tcgen05_of(tg.TMEM((128, 8), F32), smem(128, 64), smem(64, 8))
    tcgen05_of(tg.TMEM((128, 32), F32, collective=True), smem(128, 64), smem(64, 16), collective_axis="pair",
               cluster=(2,), cluster_names=("pair",))


@pytest.mark.parametrize("acc, a, b, fragments", [
    (tg.TMEM((128, 180), F32), smem(128, 64), smem(64, 180),
     ["N=180", "must be a multiple of 8 between 8 and 256, e.g. 176 or 184"]),
    (tg.TMEM((128, 256), F32), smem(128, 64), smem(64, 128), ["expected a (128, K) and b (K, 256)"]),
    (tg.TMEM((128, 128), F32), smem(128, 40), smem(40, 128), ["K is 40", "multiple of 16 (e.g. 32 or 48)"]),
    (tg.TMEM((128, 128), F16), smem(128, 64), smem(64, 128), ["f16 accumulator", "legal accumulators: f32"]),
])
def test_tcgen05_rejects_illegal_shapes_and_dtypes(acc, a, b, fragments):
    with raises_at("tcgen05", *fragments):
        tcgen05_of(acc, a, b)


@pytest.mark.parametrize("rows, fragments", [
    (32, ["M=32 rows per block", "tcgen05 MMAs have 128 rows per block, one per TMEM lane (a 2-CTA pair: 256)"]),
    (64, ["M=64 rows per block", "spreads the accumulator over the four 32-lane quarters of TMEM, a layout "
                                 "tilegemm does not model"]),
])
def test_tcgen05_m_is_128_rows_per_block(rows, fragments):
    def body(x, out, acc, a, b):
        tg.tcgen05_mma(acc.at[0:rows], a, b, accumulate=False)  # @m_rows

    with raises_at("m_rows", *fragments):
        trace(body, spec(128, 128), scratch=[tg.TMEM((128, 64), F32), smem(rows, 64), smem(64, 64)])


def test_a_2cta_pair_of_64_row_halves_is_rejected_too():
    def body(x, out, acc, a, b):
        tg.tcgen05_mma(acc.at[0:64], a, b, accumulate=False, collective_axis="pair")  # @pair_m64

    with raises_at("pair_m64", "M=64 rows per block (the 2-CTA MMA then covers 128 rows)", "four 32-lane quarters"):
        trace(body, spec(128, 128), scratch=[tg.TMEM((128, 64), F32, collective=True), smem(64, 64), smem(64, 32)],
              cluster=(2,), cluster_names=("pair",))


def test_tcgen05_pair_needs_n_in_steps_of_16():
    with raises_at("tcgen05", "N=136", "(2-CTA) N must be a multiple of 16 between 16 and 256, e.g. 128 or 144"):
        tcgen05_of(tg.TMEM((128, 136), F32, collective=True), smem(128, 64), tg.SMEM((64, 68), F16),
                   collective_axis="pair", cluster=(2,), cluster_names=("pair",))


def test_tcgen05_collective_axis_must_be_a_cluster_axis_of_two():
    with raises_at("tcgen05", "collective_axis='pair' must name a cluster axis of size 2", "cluster axes: pair=4"):
        tcgen05_of(tg.TMEM((128, 256), F32, collective=True), smem(128, 64), smem(64, 128), collective_axis="pair",
                   cluster=(4,), cluster_names=("pair",))


def test_tcgen05_pair_needs_a_collective_accumulator():
    with raises_at("tcgen05", "must be allocated with tg.TMEM(..., collective=True)") as err:
        tcgen05_of(tg.TMEM((128, 256), F32), smem(128, 64), smem(64, 128), collective_axis="pair",  # @acc
                   cluster=(2,), cluster_names=("pair",))
    err.names("acc", "the accumulator is allocated at")


def test_collective_accumulator_needs_a_collective_mma():
    with raises_at("tcgen05", "allocated with collective=True", "gives no collective_axis"):
        tcgen05_of(tg.TMEM((128, 256), F32, collective=True), smem(128, 64), smem(64, 256))


def test_tcgen05_mma_barrier_must_order_the_tensor_core():
    with raises_at("tcgen05", "without orders_tensor_core=True", "orders_tensor_core=True)") as err:
        tcgen05_of(tg.TMEM((128, 256), F32), smem(128, 64), smem(64, 256), tg.Barrier(num_arrivals=1))  # @bar
    err.names("bar", "the barrier is declared at")
    tcgen05_of(tg.TMEM((128, 256), F32), smem(128, 64), smem(64, 256), tg.Barrier(orders_tensor_core=True))


def test_tcgen05_commit_barrier_must_order_the_tensor_core():
    def body(x, out, done):
        tg.tcgen05_commit_arrive(done.at[1])  # @commit

    with raises_at("commit", "tcgen05_commit_arrive", "without orders_tensor_core=True") as err:
        trace(body, spec(128, 128), scratch=[tg.Barrier(num_barriers=2)])  # @commit_bar
    err.names("commit_bar", "the barrier is declared at")


def test_tcgen05_commit_collective_axis_must_be_a_pair():
    def body(x, out, done):
        tg.tcgen05_commit_arrive(done.at[0], collective_axis="y")  # @commit_axis

    with raises_at("commit_axis", "collective_axis='y' must name a cluster axis of size 2", "none (no cluster)"):
        trace(body, spec(128, 128), scratch=[tg.Barrier(orders_tensor_core=True)])


def test_one_and_two_cta_tcgen05_instructions_cannot_mix_in_a_kernel():
    def body(x, out, acc, a, b, done):
        tg.tcgen05_mma(acc, a, b, accumulate=False, collective_axis="pair")  # @pair_mma
        tg.tcgen05_commit_arrive(done.at[0])  # @single_commit

    with raises_at("single_commit", "this tcgen05_commit_arrive is 1-CTA, but the alloc at",
                   "is collective (2-CTA)", "all use one CTA group") as err:
        trace(body, spec(128, 128), scratch=[tg.TMEM((128, 32), F32, collective=True),  # @pair_acc
                                             smem(128, 64), smem(64, 16), tg.Barrier(orders_tensor_core=True)],
              cluster=(2,), cluster_names=("pair",))
    err.names("pair_acc", "the collective (2-CTA) alloc is at")
