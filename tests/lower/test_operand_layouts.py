"""Operands stored either way round lower to the matching layout atoms, operand major modes and TMA boxes.

A K-major operand stores K last (A [M, K], B [N, K] read through tg.transpose_ref),
an MN-major one M or N last (B [K, N], A [K, M] read through a transpose). On
sm_90a the SASS shows it: HGMMA marks MN-major operands `.tnspA` / `.tnspB`. On
sm_100a the tcgen05 instruction descriptor carries it (compiled only: no
Blackwell hardware is available).
"""
import re
import warnings

import pytest

import tilegemm as tg
from tilegemm.lang.analysis import K_MAJOR, MN_MAJOR
from tilegemm.lower.binutils import find_tool
from tilegemm.model.layouts import operand_specs
from tilegemm.runtime import device_count
from tilegemm.showcase import random_inputs, relative_error, stored_operands

from . import kernels

LAYOUTS = [("mk", "kn"), ("mk", "nk"), ("km", "kn"), ("km", "nk")]
MAJOR = {"mk": K_MAJOR, "km": MN_MAJOR, "kn": MN_MAJOR, "nk": K_MAJOR}
SHAPE = (200, 264, 136)   # ragged: two row blocks, three column blocks, a partial K step


def layout_id(layouts):
    return "a_{}-b_{}".format(*layouts)


@pytest.fixture(scope="module", params=LAYOUTS, ids=layout_id)
def hopper(request):
    a_layout, b_layout = request.param
    lowered = kernels.transposed_operands(*SHAPE, a_layout, b_layout).lower(
        *operand_specs(*SHAPE, tg.float16, a_layout, b_layout), arch="sm_90a")
    return a_layout, b_layout, lowered, lowered.compile()


def layout_function(source, buffer):
    """The body of the generated `<buffer>_layout()` function."""
    return re.search(rf"def {buffer}_layout\(\):\n(.*?)\n\n", source, re.S).group(1)


def test_each_buffer_is_tiled_from_the_wgmma_atoms_of_its_operands_major_ness(hopper):
    a_layout, b_layout, lowered, _ = hopper
    for buffer, layout in (("a_smem", a_layout), ("b_smem", b_layout)):
        assert f"SmemLayoutAtomKind.{MAJOR[layout]}_SW128" in layout_function(lowered.source, buffer)
    assert (f"make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, OperandMajorMode.{MAJOR[a_layout]}, "
            f"OperandMajorMode.{MAJOR[b_layout]}") in lowered.source


def test_tma_boxes_follow_the_stored_layout(hopper):
    a_layout, b_layout, lowered, _ = hopper
    # the GMEM tensor a TMA atom copies from is the array as stored, its dimensions in the CuTe order of the
    # buffer's modes: (MN, K); an MN-major buffer reads the row-major array with its dimensions swapped (`_t`)
    for param, layout in (("a", a_layout), ("b", b_layout)):
        tensor = param if MAJOR[layout] == K_MAJOR else f"{param}_t"
        assert re.search(rf"make_tiled_tma_atom\(cpasync.CopyBulkTensorTileG2SOp\(\), {tensor}, "
                         rf"{param}_smem_layout\(\), \(128, 64\)\)", lowered.source)


@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="needs nvdisasm to read SASS")
def test_sass_reads_mn_major_operands_transposed_and_keeps_the_wgmmas_in_flight(hopper):
    a_layout, b_layout, _, compiled = hopper
    hgmmas = [line for line in compiled.sass.splitlines() if "HGMMA." in line]
    assert hgmmas
    for line in hgmmas:
        assert (".tnspA" in line) == (MAJOR[a_layout] == MN_MAJOR), line
        assert (".tnspB" in line) == (MAJOR[b_layout] == MN_MAJOR), line
    assert compiled.meta["wgmma_serialized"] is False


@pytest.mark.parametrize("layouts", LAYOUTS, ids=layout_id)
def test_the_interpreter_agrees_with_numpy_on_the_kernel_being_lowered(layouts):
    a, b = random_inputs(*SHAPE, tg.float16)
    out = kernels.transposed_operands(*SHAPE, *layouts)(*stored_operands(a, b, *layouts), interpret=True)
    assert relative_error(out, a, b) < 1e-2


TRANSPOSE_A_BIT, TRANSPOSE_B_BIT = 1 << 15, 1 << 16   # tcgen05 kind::f16 instruction descriptor: MN-major A, B


@pytest.mark.parametrize("layouts", LAYOUTS, ids=layout_id)
def test_on_sm100a_the_tcgen05_instruction_descriptor_carries_each_operands_major_ness(layouts):
    a_layout, b_layout = layouts
    kernel = kernels.transposed_tcgen05(*SHAPE, a_layout, b_layout)
    a, b = random_inputs(*SHAPE, tg.float16)
    assert relative_error(kernel(*stored_operands(a, b, *layouts), interpret=True), a, b) < 1e-2
    ptx = kernel.lower(*operand_specs(*SHAPE, tg.float16, *layouts), arch="sm_100a").compile().ptx
    registers = set(re.findall(r"tcgen05\.mma\S*\s+\[%r\d+\], %rd\d+, %rd\d+, (%r\d+)", ptx))
    (idesc,) = {int(re.search(rf"mov\.b32\s+{re.escape(r)}, (\d+);", ptx).group(1)) for r in registers}
    assert bool(idesc & TRANSPOSE_A_BIT) == (MAJOR[a_layout] == MN_MAJOR)
    assert bool(idesc & TRANSPOSE_B_BIT) == (MAJOR[b_layout] == MN_MAJOR)


def transposed_epilogue_kernel(transforms):
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.ACC((64, 64)), tg.SMEM((64, 64), tg.float16, transforms=transforms)])
    def transposed_epilogue(y, acc, out_smem):
        out_smem.T[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(out_smem, y)
        tg.wait_smem_to_gmem(0)
    return transposed_epilogue


def test_registers_stored_into_a_transposed_view_of_a_plain_buffer_go_through_its_layout_with_modes_swapped():
    kernel = transposed_epilogue_kernel(())
    assert kernel(interpret=True).shape == (64, 64)
    assert "cute.select(out_smem.layout, mode=[1, 0])" in kernel.lower(arch="sm_90a").source


def test_registers_stored_into_a_transposed_view_of_a_swizzled_buffer_go_through_its_swizzled_layout():
    # the swizzle permutes stored offsets, so the view swaps the modes of the composed layout as it is
    kernel = transposed_epilogue_kernel(tg.mma_transforms(64, tg.float16))
    assert kernel(interpret=True).shape == (64, 64)
    lowered = kernel.lower(arch="sm_90a")
    assert "cute.select(out_smem.layout, mode=[1, 0])" in lowered.source and "swizzle=" in lowered.source
    lowered.compile()


def test_a_buffer_read_both_transposed_and_not_is_refused():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.ACC((64, 64)), tg.Barrier(num_arrivals=2)])
    def both_ways(a, b, c, a_smem, b_smem, acc, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded.at[0])
        tg.copy_gmem_to_smem(b, b_smem, loaded.at[0])
        tg.barrier_wait(loaded.at[0])
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma(acc, a_smem, b_smem.T)
        tg.wgmma_wait(0)
        c[...] = acc[...].astype(tg.float16)

    with pytest.raises(tg.KernelError, match="read as an MMA B operand both MN-major and K-major"):
        both_ways.lower(tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16), arch="sm_90a")


# ----------------------------------------------------------------------------- unswizzled operands
# kernels.one_wgmma(n) with N (contiguous in B) too narrow for any swizzle: tg.mma_transforms(n) is ().

def test_an_unswizzled_mn_major_operand_compiles_to_the_descriptors_the_layout_implies(tmp_path, monkeypatch):
    """A fresh compile (no cache) is checked against the graph; its MMA descriptor fields must agree."""
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert tg.mma_transforms(200, tg.float16) == ()
    lowered = kernels.one_wgmma(200).lower(tg.ShapeDtype((64, 64), tg.float16),
                                           tg.ShapeDtype((64, 200), tg.float16), arch="sm_90a")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tg.CompiledCodeWarning)
        assert "wgmma.mma_async" in lowered.compile().ptx


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
@pytest.mark.parametrize("n", [24, 200])
def test_an_unswizzled_mn_major_operand_matches_numpy_on_the_gpu(n):
    a, b = random_inputs(64, n, 64, tg.float16)
    out = kernels.one_wgmma(n)(a, b)
    assert relative_error(out, a, b) < 1e-2
