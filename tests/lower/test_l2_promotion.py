"""tg.copy_gmem_to_smem(..., l2_promotion=N): the copy goes through a descriptor of its own, the TMA atom's box
encoded asking L2 to fetch N bytes a miss; checked on the CPU (the graph, the generated source, the PTX; the
interpreter takes it as the hint it is). On the GPU: tests/lower/test_gpu.py and tests/ops/test_designs_gpu.py."""
import math
import re

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower import tma_descriptors
from tilegemm.lower.tma_descriptors import atom_box

from . import kernels

SPECS = kernels.two_row_specs()


def test_the_graph_records_the_promotion_and_its_fingerprint_differs():
    promoted, plain = kernels.tma_wgmma(l2_promotion=256).trace(*SPECS), kernels.tma_wgmma().trace(*SPECS)
    loads = [op for op in promoted.walk() if op.kind == "copy_gmem_to_smem"]
    assert [op.attrs["l2_promotion"] for op in loads] == [256, 256]
    assert promoted.fingerprint() != plain.fingerprint()


def test_a_size_tma_cannot_promote_to_is_refused_at_the_users_line():
    with pytest.raises(tg.KernelError, match="l2_promotion=100; a TMA load asks L2 to fetch one of 64, 128, 256 "
                                             "bytes per miss, or None") as info:
        kernels.tma_wgmma(l2_promotion=100).trace(*SPECS)
    assert "kernels.py" in str(info.value)


def test_each_promoted_atom_gets_its_descriptor_which_its_copies_name_and_the_kernel_prefetches():
    source = kernels.tma_wgmma(l2_promotion=128).lower(*SPECS).source
    for atom, tensor in (("tma_load_a_smem", "a"), ("tma_load_b_smem", "b_t")):   # b read N-major
        assert f"{atom}_l2_128 = tgtma.promoted_descriptor({atom}, {tensor}, 128, 128)" in source
        assert f"{atom}_l2_128: cutlass.GridConstant[TensorMap]" in source
        assert f"tma_desc_ptr=tgtma.descriptor_pointer({atom}_l2_128))" in source
        assert f"tgtma.prefetch_descriptor({atom}_l2_128)" in source
        assert f"cpasync.prefetch_descriptor({atom})" not in source   # its own descriptor is not read
    assert "tgtma" not in kernels.tma_wgmma().lower(*SPECS).source


def descriptor_params_read(ptx):
    """(128-byte kernel parameters, those the code reads): TMA descriptors passed and those copied through."""
    passed = re.findall(r"\.param \.align 64 \.b8 (\w+)\[128\]", ptx)
    read = set(re.findall(r"mov\.b64\s+%rd\d+, (\w+);", ptx)) & set(passed)
    return passed, read


def test_the_compiled_loads_read_only_the_promoted_descriptors():
    passed, read = descriptor_params_read(kernels.tma_wgmma(l2_promotion=256).lower(*SPECS).ptx)
    assert len(passed) == 5 and len(read) == 3   # two atoms with their descriptors and the store's; the atoms unread
    plain_passed, plain_read = descriptor_params_read(kernels.tma_wgmma().lower(*SPECS).ptx)
    assert len(plain_passed) == len(plain_read) == 3


def test_the_interpreter_computes_the_same_product():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s.shape).astype(np.float16) for s in SPECS)
    promoted = kernels.tma_wgmma(l2_promotion=64).interpret(a, b)
    np.testing.assert_array_equal(promoted, kernels.tma_wgmma().interpret(a, b))


def test_a_multicast_copy_loads_its_slice_through_its_promoted_descriptor():
    specs = tg.ShapeDtype((256, 128), tg.float16), tg.ShapeDtype((128, 256), tg.float16)
    lowered = kernels.multicast(256, 256, 128, l2_promotion=256).lower(*specs)   # B multicast and promoted, A not
    assert ("mcast_mask=mcast_mask_cm, tma_desc_ptr=tgtma.descriptor_pointer(tma_load_b_smem_l2_256))"
            in lowered.source)
    passed, read = descriptor_params_read(lowered.ptx)
    assert len(passed) == 4 and len(read) == 3   # A's atom, B's promoted descriptor, the store's; B's atom unread
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.\w+\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes"
                          r"\.multicast::cluster", lowered.ptx)) >= 1


def test_a_multicast_copys_promoted_descriptor_loads_exactly_the_bytes_each_barrier_expects(monkeypatch, tmp_path):
    """B's 64 x 128 tile (K x N) shared by 2 blocks: CuTe splits its basis's outermost extent among them, so each
    block issues two multicast loads of 64 x 32 a step and every block's barrier receives the 16 KB it expects.
    A descriptor with the basis's 64 x 64 box would deliver twice that, and the kernel would hang."""
    boxes = []
    monkeypatch.setattr(tma_descriptors, "multicast_box",
                        lambda box, n, read=tma_descriptors.multicast_box: boxes.append(read(box, n)) or boxes[-1])
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))   # compiled afresh, so the descriptor is built
    specs = tg.ShapeDtype((256, 192), tg.float16), tg.ShapeDtype((192, 384), tg.float16)
    lowered = kernels.multicast(256, 384, 192, l2_promotion=256).lower(*specs)
    lowered.compile()
    assert boxes == [[(64, 0), (32, 1)]]
    box_bytes = math.prod(extent for extent, _ in boxes[0]) * 2
    loads_per_block = len(re.findall(r"\.multicast::cluster", lowered.ptx))
    assert "mbarrier_arrive_and_expect_tx(loaded + 0, 16384)" in lowered.source
    assert box_bytes * loads_per_block * 2 == 16384


@pytest.mark.parametrize("basis,multicast,box", [
    ([(64, 0), (64, 1)], 2, [(64, 0), (32, 1)]), ([(128, 1), (256, 0)], 2, [(128, 1), (128, 0)]),
    ([(64, 0), (2, 1)], 4, [(32, 0), (1, 1)]), ([(64, 0), (64, 1)], 1, [(64, 0), (64, 1)])],
    ids=["outermost-halved", "k-major-256-rows", "spills-inward", "one-block"])
def test_a_multicast_box_divides_the_basis_among_the_blocks_from_the_outermost_dimension(basis, multicast, box):
    assert tma_descriptors.multicast_box(basis, multicast) == box


def test_a_basis_that_cannot_divide_among_the_blocks_is_refused():
    with pytest.raises(ValueError, match="extent 3 does not divide among 2 blocks"):
        tma_descriptors.multicast_box([(64, 0), (3, 1)], 2)


def copy_tile(l2_promotion):
    """c = a, one 64x64 tile through SMEM by TMA."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=dict(tile=tg.SMEM((64, 64), tg.float16), loaded=tg.Barrier(num_arrivals=1)))
    def copy_tile(a, c, tile, loaded):
        tg.copy_gmem_to_smem(a, tile, loaded.at[0], l2_promotion=l2_promotion)  # @load
        tg.barrier_wait(loaded.at[0])
        tg.copy_smem_to_gmem(tile, c)
        tg.wait_smem_to_gmem(0)
    return copy_tile


def test_blackwell_lowering_refuses_it_at_the_users_line():
    spec = tg.ShapeDtype((64, 64), tg.float16)
    copy_tile(None).lower(spec, arch="sm_100a")
    with pytest.raises(tg.KernelError, match="l2_promotion is lowered for sm_90a; on sm_100a leave it None") as info:
        copy_tile(256).lower(spec, arch="sm_100a")
    assert "test_l2_promotion.py" in str(info.value)


@pytest.mark.parametrize("gbasis, box", [('<"(64,128):(1@1,1@0)">', [(64, 1), (128, 0)]),
                                         ('<"(64,64,1):(1@0,1@1,1@2)">', [(64, 0), (64, 1), (1, 2)])])
def test_an_atoms_box_is_read_off_its_type(gbasis, box):
    assert atom_box(f"!cute_nvgpu.atom.non_exec_tiled_tma_load<sm_90, f16, copy_bits = 65536, "
                    f"tma_gbasis = {gbasis}, tma_format = F16_RN>") == box


@pytest.mark.parametrize("gbasis", ['<"((64,2),128):((1@1,64@1),1@0)">', '<"(64,64):(1@0,1@0)">'])
def test_a_box_that_splits_or_repeats_a_mode_is_refused(gbasis):
    with pytest.raises(ValueError):
        atom_box(f"!cute_nvgpu.atom.non_exec_tiled_tma_load<sm_90, f16, tma_gbasis = {gbasis}>")
