"""Elementwise math, broadcasting and row reductions lowered into WGMMA and tcgen05 epilogues: cute.math on each
thread's fragment, broadcast vectors read in the accumulator's layout (`x[None, :]`, `x[:, None]`, tg.broadcast_to
move no data), row reductions within a thread and across the threads that share a row."""
import re

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs
from tests.interpret.test_elementwise import (ELEMENTWISE, EPILOGUES, ROW_EPILOGUES, ROW_SHAPES, SHAPES,
                                              assert_matches, gelu_tanh, matmul_epilogue, run_case, softmax)

from . import kernels

M, N, K = 200, 136, 72


def specs(m=M, n=N, k=K):
    return (tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16), tg.ShapeDtype((n,), tg.float32),
            tg.ShapeDtype((m,), tg.float32))


def epilogue_source(lowered):
    src = lowered.source
    return src[src.index("warpgroup.wait_group(0)"):src.index("@cute.jit")]


def on_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")(test))


# ----------------------------------------------------------------------------- CPU: lowering and compiling

def test_bias_gelu_reads_the_row_with_stride_0_over_rows_and_computes_tanh_with_cute_math():
    lowered = matmul_epilogue(M, N, K, EPILOGUES["bias_gelu_tanh"][0]).lower(*specs(), arch="sm_90a")
    code = epilogue_source(lowered)
    assert "cute.composition(row_view, cute.make_layout((64, 128), stride=(0, 1)))" in code
    assert "cute.math.tanh(" in code
    assert re.search(r"= (x\w*) \* \1 \* \1\n", code), "x ** 3 is two multiplications"
    assert "wgmma.mma_async" in lowered.compile().ptx


def test_a_column_vector_indexed_with_none_is_read_with_stride_0_over_columns():
    lowered = matmul_epilogue(M, N, K, EPILOGUES["silu_row_scale"][0]).lower(*specs(), arch="sm_90a")
    code = epilogue_source(lowered)
    assert "cute.composition(col_view, cute.make_layout((64, 128), stride=(1, 0)))" in code
    assert "cute.math.exp(0.0 - acc_values)" in code, "sigmoid is 1 / (1 + exp(-x))"
    assert "ex2" in lowered.compile().ptx


@pytest.mark.parametrize("name", ["bias_gelu_erf", "broadcast_to", "exp_log_abs", "sqrt_rsqrt_exp2", "numpy_ufuncs",
                                  "power_of_array", "transposed_column", "reshaped_row"])
def test_every_math_function_compiles_for_sm90a(name):
    lowered = matmul_epilogue(M, N, K, EPILOGUES[name][0]).lower(*specs(), arch="sm_90a")
    assert "wgmma.mma_async" in lowered.compile().ptx


def test_row_reductions_combine_a_threads_columns_then_its_quads():
    m, n, k = 200, 128, 72
    lowered = matmul_epilogue(m, n, k, ROW_EPILOGUES["softmax"][0]).lower(*specs(m, n, k), arch="sm_90a")
    code = epilogue_source(lowered)
    assert "tgd.accumulator_row_reduce(acc_values, 128, 'max')" in code
    assert re.search(r"tgd\.accumulator_row_reduce\(\w+, 128, 'sum'\)", code)
    assert "shfl.sync.bfly" in lowered.compile().ptx


def test_a_reduction_along_the_columns_is_refused_at_the_line_naming_what_is_lowered():
    lowered = matmul_epilogue(M, N, K, lambda acc, row, col: acc - acc.max(axis=0))
    with pytest.raises(tg.KernelError, match=r"test_elementwise_lowering\.py:\d+: this kernel cannot be lowered for "
                                             r"sm_90a: a reduction along axes \(0,\) of a "
                                             r"array<64x128xf32> .* along their last axis"):
        lowered.lower(*specs(), arch="sm_90a")


@pytest.mark.parametrize("epilogue, fragment", [
    (lambda acc, row, col: acc + acc.T.T, r"transposing a array<128x64xf32> of an accumulator array's shape"),
    (lambda acc, row, col: acc + row.reshape(2, 64).reshape(1, 128),
     r"reshaping a array<2x64xf32> into a array<1x128xf32>.*only by adding or removing dimensions of size 1"),
])
def test_relayouts_that_move_data_between_threads_are_refused_at_the_line(epilogue, fragment):
    with pytest.raises(tg.KernelError, match=r"test_elementwise_lowering\.py:\d+: this kernel cannot be lowered for "
                                             r"sm_90a: " + fragment):
        matmul_epilogue(M, N, K, epilogue).lower(*specs(), arch="sm_90a")


def blackwell_bias_gelu(m, n, k, tile=128, tile_k=64):
    """gelu(a @ b + bias[None, :]) * scale[:, None] with the accumulator in TMEM, then a softmax of each row."""
    scratch = kernels.tcgen05_epilogue_scratch(tile, tile_k)

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, tile), tg.cdiv(n, tile)),
               grid_names=("m", "n"), scratch_shapes=scratch)
    def tmem_bias_gelu(a, b, bias, scale, c, a_smem, b_smem, c_smem, acc_tmem, loaded, mma_done):
        rows = tg.ds(tg.axis_index("m") * tile, tile)
        cols = tg.ds(tg.axis_index("n") * tile, tile)
        kernels.tcgen05_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc_tmem, loaded, mma_done, k)
        acc = tg.async_load_tmem(acc_tmem)
        tg.wait_load_tmem()
        y = softmax(gelu_tanh(acc + bias.at[cols][...][None, :]) * scale.at[rows][...][:, None])
        c_smem[...] = y.astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return tmem_bias_gelu


def test_on_sm100a_broadcast_vectors_take_the_tmem_load_layout_and_gelu_and_softmax_compile():
    n = 128    # one tile's columns: the softmax is of whole rows
    kernel = blackwell_bias_gelu(M, n, K)
    a, b = random_inputs(M, n, K, tg.float16)
    rng = np.random.default_rng(3)
    bias, scale = rng.standard_normal(n).astype(np.float32), rng.standard_normal(M).astype(np.float32)
    out = kernel(a, b, bias, scale, interpret=True)
    y = a.astype(np.float64) @ b.astype(np.float64) + bias
    y = 0.5 * y * (1 + np.tanh(0.7978845608028654 * (y + 0.044715 * y ** 3))) * scale[:, None]
    assert_matches(out, softmax(y))
    lowered = kernel.lower(*specs(M, 128, K), arch="sm_100a")
    code = lowered.source
    assert re.search(r"scale_part = thr_tmem_load_128x128\w*\.partition_D\(cute\.composition\(scale_view, "
                     r"cute\.make_layout\(\(128, 128\), stride=\(1, 0\)\)\)\)", code)
    assert "cute.math.tanh(" in code and "tgd.thread_row_reduce(" in code
    assert "tcgen05.ld" in lowered.compile().ptx


# ----------------------------------------------------------------------------- CPU: what stays unsupported

def test_a_vector_expanded_but_never_combined_with_an_accumulator_is_refused_at_the_line():
    @tg.kernel(out_shape=tg.ShapeDtype((1, 64), tg.float32), scratch_shapes=[tg.SMEM((1, 64), tg.float32)])
    def lonely_row(v, out, v_smem):
        v_smem[...] = tg.exp(v[...])[None, :]

    with pytest.raises(tg.KernelError, match=r"test_elementwise_lowering\.py:\d+: this kernel cannot be lowered for "
                                             r"sm_90a: broadcasting a array<64xf32> over a CUDA-core array .* vectors "
                                             r"indexed with None"):
        lonely_row.lower(tg.ShapeDtype((64,), tg.float32), arch="sm_90a")


# ----------------------------------------------------------------------------- GPU

@on_gpu
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_epilogue_math_matches_numpy_on_the_gpu(name):
    assert_matches(*run_case(name, SHAPES[1], interpret=False))   # ragged: partial tiles in every dimension


@on_gpu
@pytest.mark.parametrize("name", list(ROW_EPILOGUES))
def test_row_reductions_match_numpy_on_the_gpu(name):
    assert_matches(*run_case(name, ROW_SHAPES[1], interpret=False))
