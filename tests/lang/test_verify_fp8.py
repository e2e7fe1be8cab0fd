"""Verifier: fp8 (e4m3, e5m2) MMA operands are K-major, K = 32 per instruction; A and B mix the two fp8 types (not
fp8 with a 16-bit type)."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace
from .test_verify_mma import smem

E4M3, E5M2 = tg.float8_e4m3fn, tg.float8_e5m2


def wgmma_kernel(a_view, b_view):
    """One wgmma(acc, a_view(a_smem), b_view(b_smem)) over fp8 buffers A [64, 128] and B [128, 128] (either
    stored (N, K) for b_view=transpose, or (K, N))."""
    def body(x, out, acc, a_smem, b_smem):
        tg.wgmma(acc, a_view(a_smem), b_view(b_smem))  # @mma
        tg.wgmma_wait(0)
    return body


@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
@pytest.mark.parametrize("acc_dtype", [F32, F16], ids=["f32", "f16"])
def test_fp8_operands_read_k_major_verify(dtype, acc_dtype):
    graph = trace(wgmma_kernel(lambda a: a, lambda b: b.T), spec(8, 8),
                  scratch=[tg.ACC((64, 128), acc_dtype), smem(64, 128, dtype), smem(128, 128, dtype)])
    (mma,) = [op for op in graph.walk() if op.kind == "wgmma"]
    assert mma.arg("a").dtype == dtype


def test_an_n_major_fp8_b_is_refused_at_the_mma():
    with raises_at("mma", "wgmma reads e4m3 operand B N-major", "reads 8-bit operands only K-major",
                   "store B as [N, K]", "tg.transpose_ref(tile, (1, 0))"):
        trace(wgmma_kernel(lambda a: a, lambda b: b), spec(8, 8),
              scratch=[tg.ACC((64, 128)), smem(64, 128, E4M3), smem(128, 128, E4M3)])


def test_an_m_major_fp8_a_is_refused_at_the_mma():
    with raises_at("mma", "wgmma reads e5m2 operand A M-major", "store A as [M, K]"):
        trace(wgmma_kernel(lambda a: a.T, lambda b: b.T), spec(8, 8),
              scratch=[tg.ACC((64, 128)), smem(128, 64, E5M2), smem(128, 128, E5M2)])


def test_fp8_tile_k_is_a_multiple_of_32():
    with raises_at("mma", "wgmma K is 16", "K=32 of e4m3", "multiple of 32"):
        trace(wgmma_kernel(lambda a: a, lambda b: b.T), spec(8, 8),
              scratch=[tg.ACC((64, 128)), smem(64, 16, E4M3), smem(128, 16, E4M3)])


@pytest.mark.parametrize("a_dtype, b_dtype", [(E4M3, E5M2), (E5M2, E4M3)], ids=["e4m3-e5m2", "e5m2-e4m3"])
def test_mixed_fp8_types_verify(a_dtype, b_dtype):
    graph = trace(wgmma_kernel(lambda a: a, lambda b: b.T), spec(8, 8),
                  scratch=[tg.ACC((64, 128)), smem(64, 128, a_dtype), smem(128, 128, b_dtype)])
    (mma,) = [op for op in graph.walk() if op.kind == "wgmma"]
    assert (mma.arg("a").dtype, mma.arg("b").dtype) == (a_dtype, b_dtype)


def test_mixed_fp8_types_accumulate_in_f16_too():
    trace(wgmma_kernel(lambda a: a, lambda b: b.T), spec(8, 8),
          scratch=[tg.ACC((64, 128), F16), smem(64, 128, E5M2), smem(128, 128, E4M3)])


def test_fp8_with_a_16_bit_operand_is_refused():
    with raises_at("mma", "operands are e4m3 and f16", "A and B both f16, both bf16 or each one of e4m3, e5m2"):
        trace(wgmma_kernel(lambda a: a, lambda b: b.T), spec(8, 8),
              scratch=[tg.ACC((64, 128)), smem(64, 128, E4M3), smem(128, 128, F16)])


def tcgen05_kernel(x, out, acc, a_smem, b_smem, done):
    tg.tcgen05_mma(acc, a_smem, b_smem.T, done.at[0])  # @tcgen05
    tg.barrier_wait(done.at[0])


def tcgen05_scratch(acc_dtype, a_dtype, b_dtype):
    return [tg.TMEM((128, 128), acc_dtype), smem(128, 128, a_dtype), smem(128, 128, b_dtype),
            tg.Barrier(orders_tensor_core=True)]


def test_mixed_fp8_types_verify_on_sm100a():
    graph = trace(tcgen05_kernel, spec(8, 8), scratch=tcgen05_scratch(F32, E4M3, E5M2), arch="sm_100a")
    assert [op.kind for op in graph.walk()].count("tcgen05_mma") == 1


def test_fp8_accumulates_in_f32_on_sm100a():
    with raises_at("tcgen05", "accumulates e4m3 products into a f16 accumulator", "legal accumulators: f32"):
        trace(tcgen05_kernel, spec(8, 8), scratch=tcgen05_scratch(F16, E4M3, E4M3), arch="sm_100a")
