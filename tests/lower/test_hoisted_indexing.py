"""The CuTe identities the hoisted partitions rely on (tilegemm/lower/memory.py: staged_tensor, tma_operands): a
partition of every stage and tile, indexed by tile and stage (or first by tile and stage, then by K block, as the
WGMMA descriptors are), selects what a partition of that one stage's tile selects. Checked while tracing a @cute.jit function on the CPU, with the flagship's operand layouts (128x64 A
tiles read as two 64-row WGMMA operands, 192x64 N-major B tiles, 4 stages) and its TMA boxes."""
import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_helpers
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup
from cutlass.cute.runtime import make_ptr

STAGES, K_BLOCKS = 4, 4
TILE_COORDS = ((0, 0), (3, 5), (42, 127))   # (M or N tile, K tile) of an 8192 x 8192 operand


def a_layout():
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
    return cute.tile_to_shape(atom, (128, 64, STAGES), order=(0, 1, 2))


def b_layout():
    atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.MN_SW128, cutlass.Float16)
    return cute.tile_to_shape(atom, (192, 64, STAGES), order=(1, 0, 2))


def traced_pairs():
    """(what, per-iteration form, hoisted form) of every selection, as text: offsets and layouts."""
    pairs = []

    def note(what, old, new):
        pairs.append((what, f"{old.iterator} o {old.layout}", f"{new.iterator} o {new.layout}"))

    @cute.jit
    def trace(a_ptr: cute.Pointer, b_ptr: cute.Pointer, smem_ptr: cute.Pointer):
        a = cute.make_tensor(a_ptr, cute.make_ordered_layout((8192, 8192), order=(1, 0)))
        b_t = cute.make_tensor(b_ptr, cute.make_layout((8192, 8192), stride=(1, 8192)))
        mma = sm90_helpers.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, OperandMajorMode.K,
                                                  OperandMajorMode.MN, cutlass.Float32, (1, 1, 1), (64, 192))
        thr = mma.get_slice(0)
        a_offsets, b_offsets = cute.make_tensor(0, a_layout().outer), cute.make_tensor(0, b_layout().outer)
        a_every = thr.partition_A(cute.flat_divide(a_offsets, (64, 64)))
        b_every = thr.partition_B(b_offsets)
        for stage in cutlass.range_constexpr(STAGES):
            b_stage = thr.partition_B(b_offsets[None, None, stage])
            for tile in cutlass.range_constexpr(2):
                a_tile = thr.partition_A(cute.local_tile(a_offsets[None, None, stage], (64, 64), (tile, 0)))
                a_selected = a_every[None, None, None, tile, 0, stage]   # the stage's, selected before k_block
                for k_block in cutlass.range_constexpr(K_BLOCKS):
                    note("wgmma A", a_tile[None, None, k_block], a_every[None, None, k_block, tile, 0, stage])
                    note("wgmma A, stage selected first", a_tile[None, None, k_block], a_selected[None, None, k_block])
            b_selected = b_every[None, None, None, stage]
            for k_block in cutlass.range_constexpr(K_BLOCKS):
                note("wgmma B", b_stage[None, None, k_block], b_every[None, None, k_block, stage])
                note("wgmma B, stage selected first", b_stage[None, None, k_block], b_selected[None, None, k_block])
        for gmem, layout, box in ((a, a_layout(), (128, 64)), (b_t, b_layout(), (192, 64))):
            atom, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem,
                                                       cute.slice_(layout, (None, None, 0)), box)
            smem = cute.make_tensor(cute.recast_ptr(smem_ptr, layout.inner, dtype=cutlass.Float16), layout.outer)
            stages, tiles = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(smem, 0, 2),
                                                  cute.group_modes(cute.local_tile(coords, box, (None, None)), 0, 2))
            for stage in cutlass.range_constexpr(STAGES):
                for mn, k in TILE_COORDS:
                    tile = cute.local_tile(cute.domain_offset((mn * box[0], k * box[1]), coords), box, (0, 0))
                    s_part, g_part = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                                           cute.group_modes(smem[None, None, stage], 0, 2),
                                                           cute.group_modes(tile, 0, 2))
                    note("TMA SMEM", s_part, stages[None, stage])
                    note("TMA GMEM", g_part, tiles[None, mn, k])

    gmem = make_ptr(cutlass.Float16, 0, cute.AddressSpace.gmem, assumed_align=16)
    cute.compile(trace, gmem, gmem, make_ptr(cutlass.Float16, 0, cute.AddressSpace.smem, assumed_align=1024),
                 options="--gpu-arch sm_90a")
    return pairs


def test_hoisted_partitions_indexed_by_tile_and_stage_select_what_each_iterations_partition_selected():
    pairs = traced_pairs()
    assert len(pairs) == 2 * STAGES * (2 * K_BLOCKS + K_BLOCKS) + 2 * STAGES * len(TILE_COORDS) * 2
    assert [p for p in pairs if p[1] != p[2]] == []
    assert len({p[2] for p in pairs if p[0] == "TMA GMEM"}) == 2 * len(TILE_COORDS)   # distinct coordinates
