"""config_from_graph: the model budgets what a traced kernel actually allocates and does."""
import dataclasses
import os
import sys

import pytest

import tilegemm as tg
from tilegemm.model import GemmConfig, Raster, budget, config_from_graph
from tilegemm.model.from_graph import graph_shape, swapped
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import hopper_matmul

from .gemm_kernels import build, specs

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def traced(m, n, k, **params):
    return build(m, n, k, **params).trace(*specs(m, n, k))


def test_tiles_stages_roles_and_resources_come_from_the_graph():
    cfg = config_from_graph(traced(1024, 2048, 512, tile_m=64, tile_n=256, stages=3))
    assert (cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.stages) == (64, 256, 64, 3)
    assert (cfg.instruction, cfg.consumers, cfg.producers) == ("wgmma", 1, 0)
    assert cfg.graph_resources.smem_operand == 3 * (64 * 64 + 64 * 256) * 2
    assert cfg.graph_resources.smem_other == 64 * 256 * 2
    assert cfg.graph_resources.smem_barriers == 3 * 8
    assert cfg.graph_resources.acc_registers == 64 * 256 // 128
    assert cfg.graph_resources.threads == 128
    assert not cfg.persistent and cfg.raster is None
    assert cfg.epilogue_tile == (64, 256)


def test_budget_of_a_traced_kernel_equals_budget_of_the_equivalent_config():
    shape = (4096, 4096, 2048)
    from_kernel = budget(build(*shape, tile_m=64, tile_n=256, stages=3), shape, device="h200")
    by_hand = budget(GemmConfig(64, 256, 64, stages=3, consumers=1, epilogue_tile=(64, 256)), shape,
                     device="h200")
    assert from_kernel.resources.source == "graph" and by_hand.resources.source == "formulas"
    assert from_kernel.rows == by_hand.rows


def test_persistent_kernels_and_their_planar_snake_are_recognised():
    graph = traced(4096, 4096, 1024, persistent=True, minor_dim=0, tile_width=4)
    cfg = config_from_graph(graph)
    assert cfg.persistent and cfg.grid_blocks == 132
    assert cfg.raster == Raster(minor_dim=0, tile_width=4)
    by_hand = GemmConfig(128, 128, 64, stages=2, consumers=1, epilogue_tile=(128, 128), persistent=True,
                         raster=Raster(0, 4))
    assert budget(graph).rows == budget(by_hand, (4096, 4096, 1024)).rows


def test_a_grid_launching_n_on_its_first_axis_runs_along_n_first():
    # blocks start first grid axis fastest: with n there they walk a whole row of the 16 tile columns (2048 / 128),
    # sharing its A panel, before the next row
    assert config_from_graph(traced(1024, 2048, 512, grid_order=("n", "m"))).raster == Raster(minor_dim=1,
                                                                                              tile_width=16)
    assert config_from_graph(traced(1024, 2048, 512, grid_order=("m", "n"))).raster is None   # launch order: m fastest


def test_a_multicast_a_tile_makes_a_cluster_along_n():
    graph = traced(2048, 2048, 512, multicast_n=2)
    cfg = config_from_graph(graph)
    assert (cfg.cluster, cfg.multicast, cfg.two_cta, cfg.persistent) == ((1, 2), True, False, False)
    assert budget(graph).l2_bytes_per_tile == 512 * (128 / 2 + 128) * 2


def test_simt_dot_kernels_are_fma_designs():
    m = n = k = 256

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float32), grid=(m // 64, n // 64), grid_names=("m", "n"))
    def naive(a, b, c):
        mi, ni = tg.axis_index("m"), tg.axis_index("n")

        def step(ki, acc):
            return tg.dot(a.at[tg.ds(mi * 64, 64), tg.ds(ki * 32, 32)], b.at[tg.ds(ki * 32, 32), tg.ds(ni * 64, 64)],
                          acc)
        c[tg.ds(mi * 64, 64), tg.ds(ni * 64, 64)] = tg.fori_loop(0, k // 32, step, tg.zeros((64, 64), tg.float32))

    cfg = config_from_graph(naive.trace(*specs(m, n, k)))           # f16 operands, FMAs all the same
    assert (cfg.instruction, cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.stages) == ("fma", 64, 64, 32, 1)
    assert cfg.graph_resources.smem_operand == cfg.graph_resources.smem_other == 0
    assert cfg.epilogue_tile is None


def test_a_kernel_is_traced_at_the_shape_given():
    with pytest.raises(ValueError, match="shape"):
        budget(build(256, 256, 256), device="h200")
    with pytest.raises(ValueError, match="traced for"):
        budget(traced(256, 256, 256), (512, 512, 512))


def test_the_hopper_flagship_example_budgets_like_its_config():
    path = os.path.join(EXAMPLES, "hopper_flagship.py")
    if not os.path.exists(path):
        pytest.skip("examples/hopper_flagship.py is not there")
    sys.path.insert(0, EXAMPLES)
    try:
        import hopper_flagship
    finally:
        sys.path.remove(EXAMPLES)
    shape = (8192, 8192, 8192)
    from_kernel = budget(hopper_flagship.build(*shape), shape, device="h200")
    by_hand = GemmConfig(128, 192, 64, stages=4, release_delay=1, consumers=2, producers=1, persistent=True,
                         grid_blocks=132, raster=Raster(0, 8), epilogue_tile=(64, 64), epilogue_buffers=4,
                         acc_buffers=2, max_registers=(240, 24))  # acc_buffers=2: ping-pong consumers
    assert from_kernel.rows == budget(by_hand, shape, device="h200").rows
    assert from_kernel.resources.smem_operand == 4 * (128 * 64 + 64 * 192) * 2 and from_kernel.blocks_per_sm == 1


@pytest.mark.parametrize("schedule,acc_buffers,acc_registers", [("cooperative", 1, 96), ("pingpong", 2, 192)])
def test_pingpong_consumers_are_read_as_two_accumulator_buffers(schedule, acc_buffers, acc_registers):
    from tilegemm.ops import hopper_matmul
    shape = (4096, 4096, 4096)
    graph = hopper_matmul.build(*shape, tile_n=192, schedule=schedule).trace(
        tg.ShapeDtype(shape[::2], tg.float16), tg.ShapeDtype(shape[1:][::-1], tg.float16))
    config = config_from_graph(graph)
    assert (config.consumers, config.acc_buffers, config.pingpong) == (2, acc_buffers, schedule == "pingpong")
    assert budget(graph, device="h200").resources.acc_registers == acc_registers


@pytest.mark.parametrize("a_layout,b_layout", [("mk", "nk"), ("km", "kn"), ("km", "nk")])
def test_flagship_layout_variants_budget_like_the_default_but_for_their_layouts(a_layout, b_layout):
    from tilegemm.ops import hopper_matmul
    shape = (4096, 8192, 2048)      # M, N and K apart: a swapped dimension would show
    default = budget(hopper_matmul.build(*shape), shape, device="h200")
    variant = budget(hopper_matmul.build(*shape, a_layout=a_layout, b_layout=b_layout), shape, device="h200",
                     a_layout=a_layout, b_layout=b_layout)
    assert variant.shape == shape and (variant.config.a_layout, variant.config.b_layout) == (a_layout, b_layout)
    assert variant.config == dataclasses.replace(default.config, a_layout=a_layout, b_layout=b_layout)
    differing = {r.name for r, d in zip(variant.rows, default.rows) if r != d}
    assert differing == {"operand layouts"} and variant.predicted_s == default.predicted_s


def test_a_kernel_taking_transposed_inputs_is_traced_with_them_stored_that_way():
    from tilegemm.ops import hopper_matmul
    kernel = hopper_matmul.build(512, 256, 128, b_layout="nk")
    with pytest.raises(tg.ArgumentError, match=r"argument 1 \(b\) of kernel `hopper_flagship` is f16\[128, 256\] "
                                               r"but the kernel was built for f16\[256, 128\]"):   # B [K, N] for [N, K]
        budget(kernel, (512, 256, 128), device="h200")
    assert budget(kernel, (512, 256, 128), device="h200", b_layout="nk").config.b_layout == "nk"


@pytest.mark.parametrize("rung, delay", [("blackwell_1_basic", 1), ("blackwell_2_warp_specialized", 0)])
def test_a_tcgen05_issuer_waiting_on_the_ring_of_barriers_its_mmas_arrive_on_releases_stages_late(rung, delay):
    """Rung 1's single thread waits, each step, for the MMA before the one it just issued (a ring of 2 barriers:
    one MMA left in flight); rung 2's MMA warp never waits for an MMA, the tensor core releases each stage."""
    from tilegemm.showcase import load_example
    kernel = load_example(os.path.join(EXAMPLES, rung + ".py")).build(1024, 1024, 1024)
    assert config_from_graph(kernel.trace(*specs(1024, 1024, 1024))).release_delay == delay


def test_a_swap_ab_kernel_is_read_in_its_mmas_frame():
    # C^T = B^T A^T: the weight's rows fill the WGMMA's 64-row side, the 16 tokens are the tile's width
    m, n, k = 16, 8192, 8192
    params = dict(dtype=tg.float16, tile_m=64, tile_n=16, epi_tile_n=16, schedule="pingpong", stages=8,
                  a_layout="mk", b_layout="nk")
    swap = hopper_matmul.build(m, n, k, swap_ab=True, **params)
    graph = swap.trace(*operand_specs(m, n, k, tg.float16, "mk", "nk"))
    assert swapped(graph) and graph_shape(graph) == (n, m, k)
    cfg = config_from_graph(graph)
    assert (cfg.tile_m, cfg.tile_n, cfg.a_layout, cfg.b_layout) == (64, 16, "mk", "nk")   # the weight is MMA A
    assert cfg.epilogue_tile[0] == 64   # C^T's rows: the store slices of C, turned
    table = budget(swap, (m, n, k), b_layout="nk")
    assert table.swapped and table.shape == (n, m, k) and "swap-AB: C^T = B^T A^T, C 16x8192" in table.problem
    with pytest.raises(ValueError, match=r"traced for \(M, N, K\) = \(16, 8192, 8192\)"):
        budget(graph, (n, m, k))
    plain = hopper_matmul.build(m, n, k, **params)
    assert not swapped(plain.trace(*operand_specs(m, n, k, tg.float16, "mk", "nk")))


def _dot_kernel(a_shape, b_shape, lhs="a"):
    """A one-block kernel c [64, 64] = lhs[:64, :32] @ b[:32, :64] on CUDA cores, its left operand a slice of input
    `lhs` ("a" or "b"), traced on f16 operands of the shapes given."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32), grid=(1,), grid_names=("block",))
    def kernel(a, b, c):
        left = (a if lhs == "a" else b).at[tg.ds(0, 64), tg.ds(0, 32)]
        c[tg.ds(0, 64), tg.ds(0, 64)] = tg.dot(left, b.at[tg.ds(0, 32), tg.ds(0, 64)], tg.zeros((64, 64), tg.float32))
    return kernel.trace(tg.ShapeDtype(a_shape, tg.float16), tg.ShapeDtype(b_shape, tg.float16))


def test_a_kernel_with_one_input_is_not_a_gemm():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), grid=(1,), grid_names=("block",))
    def copy(a, c):
        c[tg.ds(0, 64), tg.ds(0, 64)] = a[tg.ds(0, 64), tg.ds(0, 64)]
    with pytest.raises(ValueError, match="is not a GEMM: the model needs inputs A"):
        graph_shape(copy.trace(tg.ShapeDtype((64, 64), tg.float16)))


def test_a_kernel_whose_a_and_b_do_not_multiply_is_refused_naming_their_shapes():
    with pytest.raises(ValueError, match=r"A \(64, 48\) and B \(32, 64\) do not multiply"):
        graph_shape(_dot_kernel((64, 48), (32, 64)))


def test_a_kernel_that_never_reads_a_has_no_tile_to_budget():
    with pytest.raises(ValueError, match=r"never reads A \(input 0\)"):
        config_from_graph(_dot_kernel((64, 64), (64, 64), lhs="b"))


def test_a_kernel_without_an_mma_has_nothing_to_budget():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), grid=(1,), grid_names=("block",))
    def add(a, b, c):
        c[tg.ds(0, 64), tg.ds(0, 64)] = a[tg.ds(0, 64), tg.ds(0, 64)] + b[tg.ds(0, 64), tg.ds(0, 64)]
    with pytest.raises(ValueError, match="has no wgmma, tcgen05_mma or dot"):
        config_from_graph(add.trace(tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16)))
