"""Partitions built once: the SMEM descriptors of the MMA operands and the TMA views of every stage and tile are
written at the top of the kernel, before every loop, and the loops index them, as CuTe's own pipelined kernels do."""
import re

import pytest

import tilegemm as tg
from tilegemm.lower.binutils import find_tool
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import hopper_matmul
from tilegemm.showcase import example_layouts

from . import kernels
from .examples import example, lower

KERNEL_TOP = " " * 4   # the indentation of the @cute.kernel function's own statements


def kernel_lines(source, needle):
    """The lines of the @cute.kernel function that contain `needle`."""
    kernel = source[source.index("@cute.kernel"):source.index("@cute.jit")]
    return [line for line in kernel.splitlines() if needle in line and not line.lstrip().startswith("#")]


def at_kernel_top(line):
    """True for a statement of the kernel function itself: outside every loop and branch."""
    return line.startswith(KERNEL_TOP) and not line.startswith(KERNEL_TOP + " ")


def flagship_source(**config):
    m = n = k = 2048
    spec = tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16)
    return hopper_matmul.build(m, n, k, dtype=tg.float16, **config).lower(*spec, arch="sm_90a").source


def blackwell_lowered(name):
    """A Blackwell example at its first verify shape, lowered for sm_100a."""
    m, n, k = example(name).SHAPES["verify"][0]
    specs = operand_specs(m, n, k, tg.float16, *example_layouts(example(name)))
    return example(name).build(m, n, k).lower(*specs, arch="sm_100a")


@pytest.mark.parametrize("schedule", ["pingpong", "cooperative"])
def test_the_flagships_wgmma_descriptors_are_built_once_before_its_loops(schedule):
    source = flagship_source(schedule=schedule)
    fragments = kernel_lines(source, ".make_fragment_A(") + kernel_lines(source, ".make_fragment_B(")
    assert len(fragments) == 2 and all(at_kernel_top(line) for line in fragments), fragments
    selections = kernel_lines(source, " = a_smem_frag[None, None, None, ")
    assert selections and all("slot" in line for line in selections), selections
    gemms = kernel_lines(source, "cute.gemm(")
    assert gemms and all(re.search(r"a_descriptors(_\d+)?\[None, None, k_block\]", g) for g in gemms), gemms


def test_views_of_parts_of_a_stage_index_their_tile_in_one_fragment():
    """The ping-pong consumer's two 64-row accumulators read rows 0-63 and 64-127 of the same A stage."""
    source = flagship_source(schedule="pingpong")
    (fragment,) = kernel_lines(source, ".make_fragment_A(")
    assert "cute.flat_divide(a_smem, (64, 64))" in fragment
    selections = kernel_lines(source, " = a_smem_frag[None, None, None, ")
    tiles = {re.search(r"a_smem_frag\[None, None, None, (\d+), 0, slot", line).group(1) for line in selections}
    assert tiles == {"0", "1"}


@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="reading the SASS needs nvdisasm")
def test_a_k_steps_wgmmas_issue_from_descriptors_selected_once_per_stage():
    """Each K block's descriptor is a 64-bit add to its stage's, selected before the k_block loop, so ptxas does
    not rebuild a descriptor's constant upper half between the WGMMAs of one group, as it did before each of them
    while every K block indexed the whole fragment (the swap-AB decode design below)."""
    m, n, k = 16, 512, 1024
    kernel = hopper_matmul.build(m, n, k, dtype=tg.float16, tile_m=64, tile_n=16, epi_tile_n=16, stages=8,
                                 schedule="pingpong", swap_ab=True, a_layout="mk", b_layout="nk")
    sass = kernel.lower(*operand_specs(m, n, k, tg.float16, "mk", "nk"), arch="sm_90a").compile().sass
    instructions = re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass)
    wgmmas = [i for i, text in enumerate(instructions) if text.startswith("HGMMA")]
    first_group = instructions[wgmmas[0]:wgmmas[3] + 1]
    assert sum(text.startswith("HGMMA") for text in first_group) == 4, first_group
    assert not [text for text in first_group if re.match(r"UMOV UR\d+, 0x40000040", text)], first_group


def test_the_flagships_tma_partitions_are_built_once_before_its_loops():
    source = flagship_source()
    partitions = kernel_lines(source, "cpasync.tma_partition(")
    assert len(partitions) == 3 and all(at_kernel_top(line) for line in partitions), partitions
    copies = kernel_lines(source, "cute.copy(tma_")
    assert copies and all(re.search(r"_tiles\[None, .*\], \w+_stages\[None, ", c)
                          or re.search(r"_stages\[None, .*\], \w+_tiles\[None, ", c) for c in copies), copies


def test_a_tma_copy_of_an_array_one_box_across_partitions_its_own_tile_where_it_copies():
    """A is one 64-row box tall: CuTe would give that tile mode stride 0, so the copy keeps its element offset."""
    source = kernels.tma_wgmma().lower(*kernels.two_row_specs()).source
    (a_partition,) = [line for line in kernel_lines(source, "cpasync.tma_partition(") if "a_smem" in line]
    assert not at_kernel_top(a_partition)
    assert "cute.domain_offset(" in source


def offset_copy(row):
    """Copies the (128, 64) box of a (512, 256) array at (row, 64) through SMEM, and back."""
    @tg.kernel(out_shape=tg.ShapeDtype((512, 256), tg.float16),
               scratch_shapes=[tg.SMEM((128, 64), tg.float16), tg.Barrier()])
    def copy_box(a, c, smem, loaded):
        tg.copy_gmem_to_smem(a.at[tg.ds(row, 128), tg.ds(64, 64)], smem, loaded.at[0])
        tg.barrier_wait(loaded.at[0])
        tg.copy_smem_to_gmem(smem, c.at[tg.ds(row, 128), tg.ds(64, 64)])
        tg.wait_smem_to_gmem(0)
    return copy_box.lower(tg.ShapeDtype((512, 256), tg.float16), arch="sm_90a").source


def test_a_tma_copy_at_whole_boxes_indexes_the_partition_of_every_box():
    source = offset_copy(256)
    assert kernel_lines(source, "a_tiles[None, 2, 1]") and kernel_lines(source, "c_tiles[None, 2, 1]")
    assert "cute.domain_offset(" not in source


def test_a_tma_copy_between_boxes_keeps_its_element_offset():
    source = offset_copy(32)
    assert not kernel_lines(source, "_tiles[")
    assert len(kernel_lines(source, "cute.domain_offset((32, 64), ")) == 2


@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="reading the SASS needs nvdisasm")
def test_the_hoisted_flagship_compiles_for_sm_90a_with_its_wgmmas_in_flight():
    lowered = lower("hopper_flagship", (1024, 1024, 1024))
    assert all(at_kernel_top(line) for line in kernel_lines(lowered.source, ".make_fragment_"))
    compiled = lowered.compile()
    assert "wgmma.mma_async" in compiled.ptx and compiled.meta["wgmma_serialized"] is False


@pytest.mark.parametrize("name", ["blackwell_4_collective", "blackwell_5_persistent"])
def test_pipelined_tcgen05_kernels_build_their_mma_and_descriptors_once_and_compile_for_sm_100a(name):
    lowered = blackwell_lowered(name)
    built = (kernel_lines(lowered.source, "sm100_helpers.make_trivial_tiled_mma(")
             + kernel_lines(lowered.source, ".make_fragment_A(") + kernel_lines(lowered.source, ".make_fragment_B("))
    assert len(built) == 3 and all(at_kernel_top(line) for line in built), built
    gemms = kernel_lines(lowered.source, "cute.gemm(")
    selections = [line for line in kernel_lines(lowered.source, "_descriptors")
                  if re.search(r"_descriptors(_\d+)? = ", line)]
    assert selections and all(re.search(r"_frag\[None, None, None, \w", line) for line in selections), selections
    assert gemms and all(re.search(r"_descriptors(_\d+)?\[None, None, k_block\]", g) for g in gemms), gemms
    compiled = lowered.compile()
    assert "tcgen05.mma" in compiled.ptx and ".target sm_100a" in compiled.ptx
