"""Fused epilogues that read an operand from memory and add it to the accumulator: a bias vector broadcast over
its rows (numpy broadcasting), a per-row vector broadcast over its columns, or a whole residual tile.

The operand is read straight into the accumulator's register layout: a zero-stride
view of it along the broadcast dimensions, partitioned like the accumulator, loaded
element by element with the array's edge predicated off (past the edge reads zero,
as TMA does).
"""
import re

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs
from tests.interpret.test_epilogue import TILE_K, TILE_M, TILE_N, matmul_scale_bias_relu

from . import kernels

SHAPES = [(128, 256, 128), (200, 136, 72)]
# kind: (GMEM shape of the operand for an (m, n) output, the view one block reads)
OPERANDS = {
    "row": (lambda m, n: (n,), lambda v, rows, cols: v.at[cols]),
    "row_1xn": (lambda m, n: (1, n), lambda v, rows, cols: v.at[tg.ds(0, 1), cols]),
    "column": (lambda m, n: (m, 1), lambda v, rows, cols: v.at[rows, tg.ds(0, 1)]),
    "matrix": (lambda m, n: (m, n), lambda v, rows, cols: v.at[rows, cols]),
}


def relative_frobenius(out, ref):
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


def on_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")(test))


def specs(m, n, k, operand_shape, operand_dtype=tg.float32):
    return (tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16),
            tg.ShapeDtype(operand_shape, operand_dtype))


def relu_plus(m, n, k, kind, dtype, through_smem=False):
    """relu(a @ b + v) in f16, v a `dtype` operand of OPERANDS[kind] converted to f32; a row vector may be staged in
    SMEM by TMA first."""
    operand_view = OPERANDS[kind][1]
    mma_layout = lambda minor: tg.mma_transforms(minor, tg.float16)  # noqa: E731
    scratch = dict(a_smem=tg.SMEM((TILE_M, TILE_K), tg.float16, transforms=mma_layout(TILE_K)),
                   b_smem=tg.SMEM((TILE_K, TILE_N), tg.float16, transforms=mma_layout(TILE_N)),
                   c_smem=tg.SMEM((TILE_M, TILE_N), tg.float16), acc=tg.ACC((TILE_M, TILE_N)),
                   v_smem=tg.SMEM((TILE_N,), dtype), loaded=tg.Barrier(num_arrivals=2, num_barriers=2))

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N)),
               grid_names=("m", "n"), scratch_shapes=scratch)
    def operand_epilogue(a, b, v, c, a_smem, b_smem, c_smem, acc, v_smem, loaded):
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)
        if through_smem:
            tg.copy_gmem_to_smem(operand_view(v, rows, cols), v_smem, loaded.at[1])
            tg.barrier_arrive(loaded.at[1])
        kernels.wgmma_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc, loaded, k)

        if through_smem:
            tg.barrier_wait(loaded.at[1])
            operand = v_smem[...]
        else:
            operand = operand_view(v, rows, cols)[...]
        c_smem[...] = tg.maximum(acc[...] + operand.astype(tg.float32), 0.0).astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return operand_epilogue


def epilogue_source(lowered):
    """The generated Hopper kernel's code after its main loop (from the wait for its MMAs on)."""
    src = lowered.source
    return src[src.index("warpgroup.wait_group(0)"):src.index("@cute.jit")]


# ----------------------------------------------------------------------------- CPU: lowering and compiling

@pytest.mark.parametrize("shape", SHAPES, ids=["128x256x128", "200x136x72"])
def test_scale_bias_relu_lowers_to_a_predicated_zero_stride_bias_read(shape):
    m, n, k = shape
    lowered = matmul_scale_bias_relu(m, n, k, alpha=0.5).lower(*specs(m, n, k, (n,)), arch="sm_90a")
    code = epilogue_source(lowered)
    broadcast = "cute.make_layout((64, 128), stride=(0, 1))"
    assert f"thr_mma_64x128.partition_C(cute.composition(bias_view, {broadcast}))" in code, "rows read stride 0"
    assert f"thr_mma_64x128.partition_C(cute.composition(cute.make_identity_tensor((128,)), {broadcast}))" in code
    assert f"bias_bounds = (cutlass.min(128, {n} - (" in code, "the edge is the array's, not the tile's"
    assert "tgd.load_broadcast(bias_part, bias_coords, bias_bounds, cutlass.Float32)" in code, \
        "each distinct element is read once, zero past the array's edge"
    assert re.search(r"y = x \+ bias_values\b", code), "the bias is added to the scaled accumulator, into y"
    ptx = lowered.compile().ptx
    assert "wgmma.mma_async" in ptx and "ld.global" in ptx and ".target sm_90a" in ptx


@pytest.mark.parametrize("kind,read,edge", [
    ("row_1xn", "cute.composition(v_view, cute.make_layout((64, 128), stride=(0, 1)))", "(1, cutlass.min(128, 136 - ("),
    ("column", "cute.composition(v_view, cute.make_layout((64, 128), stride=(1, 0)))", "(cutlass.min(64, 200 - ("),
    ("matrix", "v_view", "(cutlass.min(64, 200 - ("),
])
def test_2d_operands_broadcast_along_their_size_1_dimension(kind, read, edge):
    m, n, k = 200, 136, 72
    lowered = relu_plus(m, n, k, kind, tg.float32).lower(*specs(m, n, k, OPERANDS[kind][0](m, n)), arch="sm_90a")
    code = epilogue_source(lowered)
    assert f"v_part = thr_mma_64x128.partition_C({read})" in code
    assert f"v_bounds = {edge}" in code
    lowered.compile()


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
def test_a_half_precision_bias_is_read_in_its_type_and_converted_in_registers(dtype):
    m, n, k = 200, 136, 72
    lowered = relu_plus(m, n, k, "row", dtype).lower(*specs(m, n, k, (n,), dtype), arch="sm_90a")
    code = epilogue_source(lowered)
    typ = "cutlass.Float16" if dtype == tg.float16 else "cutlass.BFloat16"
    read = re.search(rf"(\w+) = tgd\.load_broadcast\(v_part, v_coords, v_bounds, {re.escape(typ)}\)", code)
    assert read and f"{read.group(1)}.to(cutlass.Float32)" in code, "read in its type, converted in registers"
    assert "ld.global.b16" in lowered.compile().ptx


def test_a_bias_staged_in_smem_is_read_without_predication():
    m, n, k = 200, 136, 72
    lowered = relu_plus(m, n, k, "row", tg.float32, through_smem=True).lower(*specs(m, n, k, (n,)), arch="sm_90a")
    code = epilogue_source(lowered)
    assert ("v_smem_part = thr_mma_64x128.partition_C(cute.composition(v_smem, "
            "cute.make_layout((64, 128), stride=(0, 1))))") in code
    assert "v_smem_part.load()" in code and "elem_less" not in code
    assert "ld.shared" in lowered.compile().ptx


def blackwell_bias(m, n, k, tile=128, tile_k=64):
    """relu(a @ b + bias) with the accumulator in TMEM: the bias takes the layout of the tcgen05.ld registers."""
    scratch = kernels.tcgen05_epilogue_scratch(tile, tile_k)

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, tile), tg.cdiv(n, tile)),
               grid_names=("m", "n"), scratch_shapes=scratch)
    def tmem_bias(a, b, bias, c, a_smem, b_smem, c_smem, acc_tmem, loaded, mma_done):
        rows = tg.ds(tg.axis_index("m") * tile, tile)
        cols = tg.ds(tg.axis_index("n") * tile, tile)

        kernels.tcgen05_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc_tmem, loaded, mma_done, k)

        acc = tg.async_load_tmem(acc_tmem)
        tg.wait_load_tmem()
        c_smem[...] = tg.maximum(acc + bias.at[cols][...], 0.0).astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return tmem_bias


def test_on_sm100a_the_bias_is_partitioned_like_the_tmem_load():
    m, n, k = 200, 136, 72
    kernel = blackwell_bias(m, n, k)
    a, b = random_inputs(m, n, k, tg.float16)
    bias = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = kernel(a, b, bias, interpret=True)
    assert relative_frobenius(out, np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0.0)) < 1e-2
    lowered = kernel.lower(*specs(m, n, k, (n,)), arch="sm_100a")
    code = lowered.source
    assert re.search(r"bias_part = thr_tmem_load_128x128\w*\.partition_D\(cute\.composition\(bias_view, "
                     r"cute\.make_layout\(\(128, 128\), stride=\(0, 1\)\)\)\)", code)
    assert "tgd.load_broadcast(bias_part, bias_coords, bias_bounds, cutlass.Float32)" in code
    ptx = lowered.compile().ptx
    assert "tcgen05.ld" in ptx and "ld.global" in ptx


# ----------------------------------------------------------------------------- CPU: a tg.dot result with loaded operands

@pytest.mark.parametrize("operand_shape", [(64,), (64, 64)], ids=["bias", "tile"])
def test_a_loaded_operand_added_to_a_cuda_core_dot_runs_and_compiles(operand_shape):
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32))
    def dot_plus(a, b, d, c):
        c[...] = tg.dot(a, b) + d[...]

    rng = np.random.default_rng(0)
    a, b, d = (rng.standard_normal(s).astype(np.float32) for s in ((64, 64), (64, 64), operand_shape))
    assert np.allclose(dot_plus(a, b, d, interpret=True), a @ b + d, atol=1e-4)
    spec = tg.ShapeDtype((64, 64), tg.float32)
    lowered = dot_plus.lower(spec, spec, tg.ShapeDtype(operand_shape, tg.float32), arch="sm_90a")
    assert "d_regs.load()" in lowered.source and "ld.global" in lowered.compile().ptx


def test_storing_the_broadcast_vector_itself_is_refused_at_the_line():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.ACC((64, 64)), tg.SMEM((64,), tg.float32)])
    def store_bias(bias, c, acc, v_smem):
        row = bias[...]
        acc[...] = acc[...] + row
        v_smem[...] = row

    with pytest.raises(tg.KernelError, match=r"test_epilogue_lowering\.py:\d+: .*storing a array<64xf32> laid out "
                                             r"for broadcasting over an accumulator"):
        store_bias.lower(tg.ShapeDtype((64,), tg.float32), arch="sm_90a")


# ----------------------------------------------------------------------------- GPU

@on_gpu
@pytest.mark.parametrize("shape", SHAPES, ids=["128x256x128", "200x136x72"])
def test_scale_bias_relu_matches_numpy_on_the_gpu(shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    bias = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    out = matmul_scale_bias_relu(m, n, k, alpha=0.5)(a, b, bias)
    ref = np.maximum(0.5 * (a.astype(np.float64) @ b.astype(np.float64)) + bias, 0.0)
    assert out.shape == (m, n) and out.dtype == np.float16
    assert relative_frobenius(out, ref) < 1e-2


@on_gpu
@pytest.mark.parametrize("kind,dtype,through_smem", [("row", tg.bfloat16, False), ("row_1xn", tg.float16, False),
                                                     ("column", tg.float32, False), ("matrix", tg.float16, False),
                                                     ("row", tg.float32, True)],
                         ids=["row-bf16", "row_1xn-f16", "column-f32", "matrix-f16", "row-smem"])
def test_operand_epilogues_match_numpy_on_the_gpu(kind, dtype, through_smem):
    m, n, k = 200, 136, 72
    a, b = random_inputs(m, n, k, tg.float16)
    v = np.random.default_rng(3).standard_normal(OPERANDS[kind][0](m, n)).astype(np.float32).astype(dtype)
    out = relu_plus(m, n, k, kind, dtype, through_smem)(a, b, v)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + v.astype(np.float64), 0.0)
    assert relative_frobenius(out, ref) < 1e-2
