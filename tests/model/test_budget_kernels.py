"""tg.model.budget on every kind of kernel the verifier accepts: batched, with extra inputs, epilogues, on the
wrong architecture; what it cannot model it says."""
import os
import warnings

import pytest

import tilegemm as tg
from tilegemm.model import budget
from tilegemm.showcase import load_example
from tests.interpret.test_epilogue import matmul_scale_bias_relu

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
TILE_M, TILE_N, TILE_K = 64, 128, 64


def batched_matmul(batch, m, n, k, dtype=tg.float16, shared_b=False):
    """c[i] = a[i] @ b[i] (or a[i] @ b with `shared_b`): one 64x128 tile of one GEMM of the batch per block."""

    @tg.kernel(out_shape=tg.ShapeDtype((batch, m, n), dtype),
               grid=(tg.cdiv(m, TILE_M), tg.cdiv(n, TILE_N), batch), grid_names=("m", "n", "batch"),
               scratch_shapes=[tg.SMEM((TILE_M, TILE_K), dtype, transforms=tg.mma_transforms(TILE_K, dtype)),
                               tg.SMEM((TILE_K, TILE_N), dtype, transforms=tg.mma_transforms(TILE_N, dtype)),
                               tg.SMEM((TILE_M, TILE_N), dtype), tg.ACC((TILE_M, TILE_N)),
                               tg.Barrier(num_arrivals=2)])
    def batched(a, b, c, a_smem, b_smem, c_smem, acc, loaded):
        i = tg.axis_index("batch")
        rows = tg.ds(tg.axis_index("m") * TILE_M, TILE_M)
        cols = tg.ds(tg.axis_index("n") * TILE_N, TILE_N)

        def step(kk, _):
            ks = tg.ds(kk * TILE_K, TILE_K)
            tg.copy_gmem_to_smem(a.at[i, rows, ks], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[ks, cols] if shared_b else b.at[i, ks, cols], b_smem, loaded.at[0])
            tg.barrier_wait(loaded.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)
        tg.fori_loop(0, tg.cdiv(k, TILE_K), step, None)
        c_smem[...] = acc[...].astype(dtype)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[i, rows, cols])
        tg.wait_smem_to_gmem(0)
    return batched


def test_a_batched_kernel_is_budgeted_as_its_batch_of_gemms_in_one_launch():
    shape = (2048, 2048, 1024)
    one = budget(batched_matmul(1, *shape), (1, *shape))
    four = budget(batched_matmul(4, *shape), (4, *shape))
    assert (one.batch, four.batch) == (1, 4) and four.shape == one.shape == shape
    assert four.flops == 4 * one.flops and four.min_bytes == 4 * one.min_bytes
    assert four.tiles == 4 * one.tiles and four.tile_time_s == one.tile_time_s
    assert four.l2_bytes == 4 * one.l2_bytes and four.dram_bytes >= 4 * one.min_bytes
    assert four.predicted_s > one.predicted_s
    assert four.table().startswith("budget   4 x 2048x2048x1024 f16")


def test_a_batched_graph_carries_its_batch_and_the_kernel_path_agrees():
    kernel = batched_matmul(3, 256, 512, 128)
    graph = kernel.trace(tg.ShapeDtype((3, 256, 128), tg.float16), tg.ShapeDtype((3, 128, 512), tg.float16))
    assert budget(graph).rows == budget(kernel, (3, 256, 512, 128)).rows
    assert budget(graph).config.raster is None, "launch order, m fastest"
    with pytest.raises(ValueError, match=r"traced for \(batch, M, N, K\) = \(3, 256, 512, 128\)"):
        budget(graph, (256, 512, 128))


def test_an_operand_shared_by_the_batch_is_named_as_what_the_model_does_not_cover():
    graph = batched_matmul(2, 256, 256, 128, shared_b=True).trace(tg.ShapeDtype((2, 256, 128), tg.float16),
                                                                  tg.ShapeDtype((128, 256), tg.float16))
    with pytest.raises(ValueError, match=r"B \(128, 256\) and C \(2, 256, 256\) lead with different batch"):
        budget(graph)


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_a_grouped_gemm_is_budgeted_as_one_gemm_of_the_outputs_shape_and_says_so(w_layout):
    grouped = load_example(os.path.join(EXAMPLES, "grouped_gemm_moe.py"))
    m, n, k, experts = 1024, 512, 256, 4
    w = (experts, n, k) if w_layout == "nk" else (experts, k, n)
    graph = grouped.build(m, n, k, experts, w_layout=w_layout).trace(
        tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype(w, tg.float16), tg.ShapeDtype((m // 64,), tg.int32))
    b = budget(graph, device="h200")
    assert b.shape == (m, n, k) and b.batch == 1 and b.flops == 2 * m * n * k
    assert (b.config.tile_m, b.config.tile_n, b.config.tile_k) == (TILE_M, TILE_N, TILE_K)
    assert b.config.b_layout == w_layout and not b.config.persistent
    assert b.notes[0].startswith("B stacks 4 weights, one selected per tile at run time (a grouped GEMM)")


def test_a_kernel_with_a_bias_input_is_budgeted_with_extra_inputs_and_the_bias_is_listed_as_not_modelled():
    m, n, k = 512, 512, 256
    bias = tg.ShapeDtype((n,), tg.float32)
    b = budget(matmul_scale_bias_relu(m, n, k, alpha=0.5), (m, n, k), extra_inputs=[bias])
    assert b.legal and b.flops == 2 * m * n * k
    assert len(b.notes) == 1 and b.notes[0].startswith("input 2 (bias) f32[512], 2.0 KB")
    assert "NOT MODELLED  input 2 (bias)" in b.table()


def test_a_kernel_whose_extra_inputs_are_not_given_says_how_to_give_them():
    with pytest.raises(tg.ArgumentError, match=r"takes 3 input array\(s\) \(a, b, bias\), got 2\. Give a kernel's "
                                               r"inputs after A and B as extra_inputs="):
        budget(matmul_scale_bias_relu(256, 256, 128, alpha=0.5), (256, 256, 128))


def test_a_tcgen05_kernel_budgeted_for_an_h200_warns_and_names_the_device_that_has_it():
    module = load_example(os.path.join(EXAMPLES, "blackwell_1_basic.py"))
    kernel = module.build(1024, 1024, 1024)
    with pytest.warns(UserWarning, match=r"tcgen05 MMAs, which NVIDIA H200 SXM \(sm_90a\) does not have.*'b200'"):
        b = budget(kernel, (1024, 1024, 1024), device="h200")
    assert not b.legal and "ILLEGAL  NVIDIA H200 SXM (sm_90a) has no tcgen05 path" in b.table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert budget(kernel, (1024, 1024, 1024), device="b200").legal


def test_a_cuda_core_dot_of_gmem_refs_reads_its_operands_as_stored():
    @tg.kernel(out_shape=tg.ShapeDtype((32, 32), tg.float32))
    def dot_refs(a, b, c):
        c[...] = tg.dot(a, b)

    b = budget(dot_refs, (32, 32, 32))
    assert b.config.instruction == "fma" and (b.config.a_layout, b.config.b_layout) == ("mk", "kn")


# ----------------------------------------------------------------------------- one shared-memory figure

def lowered_examples():
    """(name, builder, arch) of every example ladder rung and of tg.matmul's Hopper flagship."""
    from tests.lower.examples import BLACKWELL, HOPPER, example
    from tilegemm.ops import hopper_matmul
    rungs = [(name, example(name), "sm_100a" if name in BLACKWELL else "sm_90a") for name in HOPPER + BLACKWELL]
    return rungs + [("hopper_flagship", hopper_matmul, "sm_90a")]


@pytest.mark.parametrize("name, module, arch", lowered_examples(), ids=lambda x: x if isinstance(x, str) else "")
def test_the_models_shared_memory_is_what_the_lowering_launches_with(name, module, arch):
    """The model counts a block's shared memory as laid out (alignment padding and TMEM words included)."""
    from tilegemm.model.layouts import operand_specs
    from tilegemm.showcase import example_layouts
    m, n, k = getattr(module, "SHAPES", {"verify": [(1024, 1024, 1024)]})["verify"][0]
    layouts = example_layouts(module) if hasattr(module, "SHAPES") else ("mk", "kn")
    lowered = module.build(m, n, k).lower(*operand_specs(m, n, k, tg.float16, *layouts), arch=arch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a rung the model does not fit still counts its resources
        resources = budget(lowered.graph, device="b200" if arch == "sm_100a" else "h200").resources
    assert resources.source == "graph"
    assert resources.smem_bytes == lowered.generated.launch.smem_bytes
