"""tg.matmul on 3-D inputs: a [B, M, K] by a shared b [K, N] (folded into M) or by b [B, K, N] (a kernel with a
batch dimension), each entry stored either way round; what it cannot take is refused naming the fix."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import dispatch, hopper_matmul


def operands(batch, m, n, k, shared, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    b = rng.standard_normal((k, n) if shared else (batch, k, n)).astype(dtype)
    return a, b


def expected(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


@pytest.mark.parametrize("shape", [(3, 1, 200, 136), (2, 40, 136, 264), (4, 130, 72, 200)])
def test_a_shared_b_multiplies_every_batch_entry(shape):
    a, b = operands(*shape, shared=True)
    c = tg.matmul(a, b, interpret=True)
    assert c.shape == (shape[0], shape[1], shape[2])
    tt.assert_close(c, expected(a, b), k=shape[3])


@pytest.mark.parametrize("transposed_a,transposed_b", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("shape", [(3, 1, 200, 136), (2, 72, 136, 264)])
def test_a_b_per_batch_entry_is_one_batched_kernel(shape, transposed_a, transposed_b):
    a, b = operands(*shape, shared=False, dtype=tg.bfloat16, seed=1)
    a_arg = np.ascontiguousarray(a.mT).mT if transposed_a else a
    b_arg = np.ascontiguousarray(b.mT).mT if transposed_b else b
    c = tg.matmul(a_arg, b_arg, interpret=True)
    tt.assert_close(c, expected(a, b), k=shape[3], dtype=tg.bfloat16)


def test_out_of_a_batch_is_written():
    a, b = operands(2, 40, 136, 72, shared=True)
    out = np.full((2, 40, 136), np.nan, np.float16)
    assert tg.matmul(a, b, out=out, interpret=True) is out
    tt.assert_close(out, expected(a, b), k=72)


def test_the_batched_choice_is_a_design_of_one_kernel_with_the_batch():
    params = dict(dispatch.choose_config(64, 4096, 4096, "float16", "h200", 132, "mk", "nk", batch=8))
    assert params["batch"] == 8 and params.get("split_k", 1) == 1


def test_the_batched_kernel_compiles_for_sm90a():
    kernel = hopper_matmul.build(16, 1024, 512, batch=3, tile_m=64, tile_n=16, epi_tile_n=16, swap_ab=True,
                                 b_layout="nk")
    specs = [tg.ShapeDtype((3,) + s.shape, s.dtype) for s in operand_specs(16, 1024, 512, tg.float16, "mk", "nk")]
    kernel.lower(*specs, arch="sm_90a").compile()


@pytest.mark.parametrize("a_shape,b_shape,message", [
    ((2, 8, 16), (3, 16, 8), r"a \[B, M, K\] by b \[K, N\] or \[B, K, N\]; got shapes \(2, 8, 16\) and \(3, 16, 8\)"),
    ((8, 16), (2, 16, 8), r"got shapes \(8, 16\) and \(2, 16, 8\)"),
    ((2, 2, 8, 16), (16, 8), r"got shapes \(2, 2, 8, 16\)"),
])
def test_other_ranks_and_batches_are_refused(a_shape, b_shape, message):
    with pytest.raises(tg.ArgumentError, match=message):
        tg.matmul(np.ones(a_shape, np.float16), np.ones(b_shape, np.float16), interpret=True)


def test_a_batch_folded_into_rows_must_be_row_major():
    a = np.ones((16, 2, 8), np.float16).transpose(1, 0, 2)     # [2, 16, 8], entries interleaved
    with pytest.raises(tg.ArgumentError, match=r"folds the batch of a \(2, 16, 8\) into its rows.*a.contiguous\(\)"):
        tg.matmul(a, np.ones((8, 8), np.float16), interpret=True)


def test_batch_entries_must_follow_each_other_packed():
    b = np.ones((2, 9, 16), np.float16)[:, :8]                 # [2, 8, 16], each entry row-major, 144 apart
    with pytest.raises(tg.ArgumentError, match="batch entries of b packed .* batch stride is 144 elements, not 128"):
        tg.matmul(np.ones((2, 8, 8), np.float16), b, interpret=True)
