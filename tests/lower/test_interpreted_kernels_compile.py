"""Kernels a Pallas user writes, which the interpreter runs, also lower and compile: a TMA copy of a batched array
whose batch dimension is indexed away or sliced to size 1, a scalar read of a GMEM ref in register math (also
carried across a loop's iterations), and arithmetic on an array loaded from shared memory. Each runs in the interpreter, compiles for sm_90a on the CPU,
and matches numpy on the GPU."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count

TILE = 64


def on_gpu(test):
    return pytest.mark.gpu(pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")(test))


def batched_matmul(batch, m, n, k, batch_view):
    """c[i] = a[i] @ b[i], one 64x64 tile per block; `batch_view(i)` selects batch i of a GMEM ref: an index
    (the dimension goes) or a size-1 slice (it stays, and the copy drops it)."""
    swizzled = tg.mma_transforms(TILE, tg.float16)

    @tg.kernel(out_shape=tg.ShapeDtype((batch, m, n), tg.float16), grid=(batch, m // TILE, n // TILE),
               grid_names=("batch", "m", "n"),
               scratch_shapes=[tg.SMEM((TILE, TILE), tg.float16, transforms=swizzled),
                               tg.SMEM((TILE, TILE), tg.float16, transforms=swizzled),
                               tg.ACC((TILE, TILE)), tg.SMEM((TILE, TILE), tg.float16), tg.Barrier(num_arrivals=2)])
    def bmm(a, b, c, a_smem, b_smem, acc, c_smem, loaded):
        i = batch_view(tg.axis_index("batch"))
        rows, cols = tg.ds(tg.axis_index("m") * TILE, TILE), tg.ds(tg.axis_index("n") * TILE, TILE)

        def step(ki, _):
            ks = tg.ds(ki * TILE, TILE)
            tg.copy_gmem_to_smem(a.at[i, rows, ks], a_smem, loaded)
            tg.copy_gmem_to_smem(b.at[i, ks, cols], b_smem, loaded)
            tg.barrier_wait(loaded)
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
        tg.fori_loop(0, k // TILE, step, None)
        c_smem[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[i, rows, cols])
        tg.wait_smem_to_gmem(0)
    return bmm


BATCH_VIEWS = {"index": lambda i: i, "size_1_slice": lambda i: tg.ds(i, 1)}


def scaled_product(scale_of):
    """c = scale_of(x) * (a @ b): a 0-d array read at run time from a GMEM ref x, times the accumulator."""
    swizzled = tg.mma_transforms(TILE, tg.float16)

    @tg.kernel(out_shape=tg.ShapeDtype((TILE, TILE), tg.float32),
               scratch_shapes=[tg.SMEM((TILE, TILE), tg.float16, transforms=swizzled),
                               tg.SMEM((TILE, TILE), tg.float16, transforms=swizzled),
                               tg.ACC((TILE, TILE)), tg.Barrier(num_arrivals=2)])
    def scaled(a, b, x, c, a_smem, b_smem, acc, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c[...] = scale_of(x) * acc[...]
    return scaled


def carried_scale(x):
    """x[2], carried across a loop's iterations (each reads the next element)."""
    return tg.fori_loop(0, 2, lambda i, _: x[i + 1], x[0])


def affine_of_smem():
    """c = 2 a + 1, computed on an array loaded from shared memory (no accumulator involved)."""
    @tg.kernel(out_shape=tg.ShapeDtype((TILE, TILE), tg.float16),
               scratch_shapes=[tg.SMEM((TILE, TILE), tg.float16), tg.Barrier(num_arrivals=1)])
    def affine(a, c, a_smem, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.barrier_wait(loaded)
        c[...] = (a_smem[...] * 2.0 + 1.0).astype(tg.float16)
    return affine


def batched_case(view, batch=2, m=128, n=128, k=128):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, m, k)).astype(np.float16)
    b = rng.standard_normal((batch, k, n)).astype(np.float16)
    return batched_matmul(batch, m, n, k, BATCH_VIEWS[view]), (a, b), a.astype(np.float64) @ b.astype(np.float64)


def scaled_case(scale_of=lambda x: x[0], factor=3.0):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((TILE, TILE)).astype(np.float16) for _ in range(2))
    x = np.array([3.0, -1.0, 0.5], np.float32)
    return scaled_product(scale_of), (a, b, x), factor * (a.astype(np.float64) @ b.astype(np.float64))


def affine_case():
    a = np.random.default_rng(2).standard_normal((TILE, TILE)).astype(np.float16)
    return affine_of_smem(), (a,), 2.0 * a.astype(np.float64) + 1.0


CASES = {"batch_index": lambda: batched_case("index"), "batch_size_1_slice": lambda: batched_case("size_1_slice"),
         "gmem_scalar_times_accumulator": scaled_case,
         "gmem_scalar_carried_by_a_loop": lambda: scaled_case(carried_scale, factor=0.5),
         "smem_array_math": affine_case}


def relative_frobenius(out, ref):
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("case", CASES)
def test_the_interpreter_runs_it_and_it_compiles_for_sm90a(case):
    kernel, inputs, reference = CASES[case]()
    assert relative_frobenius(kernel(*inputs, interpret=True), reference) < 1e-2
    lowered = kernel.lower(*(tg.ShapeDtype(x.shape, x.dtype) for x in inputs), arch="sm_90a")
    assert lowered.graph.target == "sm_90a" and ".entry" in lowered.compile().ptx


def test_a_batched_copy_moves_a_two_dimensional_box_of_a_three_dimensional_array():
    kernel, inputs, _ = batched_case("index")
    source = kernel.lower(*(tg.ShapeDtype(x.shape, x.dtype) for x in inputs), arch="sm_90a").source
    assert source.count("cpasync.make_tiled_tma_atom(") == 3
    assert all(", (64, 64))" in line for line in source.splitlines() if "make_tiled_tma_atom(" in line)


@on_gpu
@pytest.mark.parametrize("case", CASES)
def test_it_matches_numpy_on_the_gpu(case):
    kernel, inputs, reference = CASES[case]()
    assert relative_frobenius(kernel(*inputs), reference) < 1e-2
