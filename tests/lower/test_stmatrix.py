"""tg.stmatrix, the epilogue's register-to-SMEM store by 8x8 matrices: it runs in the interpreter like
`ref[...] = array`, is refused at the user's line where stmatrix cannot store the array, lowers to stmatrix.x4
(x2 where N is not a multiple of 16) on sm_90a, and matches numpy on the GPU."""
import warnings

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs, relative_error

K = 64


def epilogue_matmul(m, n, *, swizzled_output=False, stmatrix=True, transposed=False):
    """c = a [m, 64] @ b [64, n] in f16 by one warpgroup: one WGMMA, the f16 result stored into SMEM with
    tg.stmatrix (or `ref[...] =`), then one TMA store; `transposed`: c = (a @ b)^T [n, m], stored through a
    transposed view of its [n, m] tile (as a swap-AB epilogue stores C^T's accumulator)."""
    out_tile = (n, m) if transposed else (m, n)
    out_transforms = tg.mma_transforms(out_tile[1], tg.float16) if swizzled_output else ()

    @tg.kernel(out_shape=tg.ShapeDtype(out_tile, tg.float16),
               scratch_shapes=[tg.SMEM((m, K), tg.float16, transforms=tg.mma_transforms(K, tg.float16)),
                               tg.SMEM((K, n), tg.float16, transforms=tg.mma_transforms(n, tg.float16)),
                               tg.ACC((m, n)), tg.SMEM(out_tile, tg.float16, transforms=out_transforms),
                               tg.Barrier(num_arrivals=2)])
    def matmul(a, b, c, a_smem, b_smem, acc, c_smem, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        window = tg.transpose_ref(c_smem, (1, 0)) if transposed else c_smem
        if stmatrix:
            tg.stmatrix(window, acc[...].astype(tg.float16))
        else:
            window[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c)
        tg.wait_smem_to_gmem(0)
    return matmul


def specs(m, n):
    return tg.ShapeDtype((m, K), tg.float16), tg.ShapeDtype((K, n), tg.float16)


# ----------------------------------------------------------------------------- interpreter

def test_the_interpreter_stores_what_a_plain_store_stores():
    a, b = random_inputs(128, 128, K, tg.float16)
    assert np.array_equal(epilogue_matmul(128, 128)(a, b, interpret=True),
                          epilogue_matmul(128, 128, stmatrix=False)(a, b, interpret=True))


def test_into_a_transposed_view_it_stores_the_transpose():
    a, b = random_inputs(128, 64, K, tg.float16)
    assert np.array_equal(epilogue_matmul(128, 64, transposed=True, swizzled_output=True)(a, b, interpret=True),
                          epilogue_matmul(128, 64)(a, b, interpret=True).T)


def test_a_tma_store_of_the_tile_without_commit_smem_is_a_race():
    """stmatrix writes shared memory through the generic proxy (its declared effect), as ref[...] = does."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.ACC((64, 64)), tg.SMEM((64, 64), tg.float16)])
    def unfenced(c, acc, c_smem):
        tg.stmatrix(c_smem, acc[...].astype(tg.float16))
        tg.copy_smem_to_gmem(c_smem, c)
        tg.wait_smem_to_gmem(0)

    with pytest.raises(tg.RaceError, match="commit_smem"):
        unfenced(interpret=True)


# ----------------------------------------------------------------------------- what stmatrix cannot store

def stored(scratch, body):
    """Traces `body(c, *scratch)` as a kernel with one 64x64 f16 output."""
    return tg.kernel(body, out_shape=tg.ShapeDtype((64, 64), tg.float16), scratch_shapes=scratch).trace()


def test_32_bit_arrays_are_refused_at_the_line():
    def body(c, acc, out):
        tg.stmatrix(out, acc[...])

    with pytest.raises(tg.KernelError, match=r"test_stmatrix\.py:\d+: stmatrix stores 16-bit elements \(f16 or "
                                             r"bf16\), not f32: convert the array"):
        stored([tg.ACC((64, 64)), tg.SMEM((64, 64), tg.float32)], body)


def test_arrays_not_in_whole_64_row_blocks_are_refused_at_the_line():
    def body(c, acc, out):
        tg.stmatrix(out, acc[...][:32, :].astype(tg.float16))

    with pytest.raises(tg.KernelError, match=r"test_stmatrix\.py:\d+: stmatrix of a smem<32x64xf16>.* rows are a "
                                             r"multiple of 64 and columns a multiple of 8"):
        stored([tg.ACC((64, 64)), tg.SMEM((32, 64), tg.float16)], body)


def test_arrays_not_in_the_accumulator_layout_are_refused_at_the_line():
    def body(c, src, out):
        tg.stmatrix(out, src[...])

    with pytest.raises(tg.KernelError, match=r"test_stmatrix\.py:\d+: this kernel cannot be lowered for sm_90a: "
                                             r"stmatrix of a array<64x64xf16> that is not in the WGMMA accumulator"):
        stored([tg.SMEM((64, 64), tg.float16), tg.SMEM((64, 64), tg.float16)], body)


def test_it_is_refused_on_sm100a_saying_how_blackwell_stores_arrays():
    def body(c, acc, out):
        loaded = tg.async_load_tmem(acc)
        tg.wait_load_tmem()
        tg.stmatrix(out, loaded.astype(tg.float16))

    kernel = tg.kernel(body, out_shape=tg.ShapeDtype((128, 64), tg.float16), arch="sm_100a",
                       scratch_shapes=[tg.TMEM((128, 64), tg.float32), tg.SMEM((128, 64), tg.float16)])
    with pytest.raises(tg.KernelError, match=r"stmatrix cannot run on sm_100a: .*store them with ref\[\.\.\.\] = "
                                             r"array"):
        kernel.trace()


# ----------------------------------------------------------------------------- lowering

CASES = [(128, 128, False, False), (128, 128, True, False), (64, 24, False, False), (128, 64, True, True),
         (64, 24, True, True)]
CASE_IDS = ["128x128", "128x128-swizzled", "64x24-x2", "128x64-transposed-swizzled", "64x24-transposed-x2"]


@pytest.mark.parametrize("m, n, swizzled, transposed", CASES, ids=CASE_IDS)
def test_it_compiles_to_stmatrix_one_instruction_for_four_or_two_matrices(m, n, swizzled, transposed, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))   # a fresh compile is checked against the graph
    kernel = epilogue_matmul(m, n, swizzled_output=swizzled, transposed=transposed)
    lowered = kernel.lower(*specs(m, n), arch="sm_90a")
    assert "cute.nvgpu.warp.StMatrix8x8x16bOp" in lowered.source and "stmatrix" in lowered.features
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        warnings.simplefilter("ignore", tg.PerformanceWarning)   # one warpgroup's 128-row accumulator
        ptx = lowered.compile().ptx
    instructions = [line for line in ptx.splitlines() if "stmatrix." in line]
    matrices = 4 if n % 16 == 0 else 2
    matrix_bytes, warps = 8 * 16, 4
    form = f"stmatrix.sync.aligned.m8n8.x{matrices}{'.trans' if transposed else ''}.shared.b16"
    assert instructions and all(form in line for line in instructions)
    assert len(instructions) == m * n * 2 // (matrices * matrix_bytes * warps)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("m, n, swizzled, transposed", CASES, ids=CASE_IDS)
def test_it_matches_numpy_on_the_gpu(m, n, swizzled, transposed):
    a, b = random_inputs(m, n, K, tg.float16)
    out = epilogue_matmul(m, n, swizzled_output=swizzled, transposed=transposed)(a, b)
    plain = epilogue_matmul(m, n, stmatrix=False)(a, b)
    assert relative_error(out.T if transposed else out, a, b) < 1e-2
    assert np.array_equal(out, plain.T if transposed else plain)
    # a plain store through the same (transposed, swizzled) view stores the same tile
    assert np.array_equal(out, epilogue_matmul(m, n, swizzled_output=swizzled, transposed=transposed,
                                               stmatrix=False)(a, b))
