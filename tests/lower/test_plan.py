"""The lowering's static analyses: view composition, buffer roles, barrier counting, array distributions."""
import pytest

import tilegemm as tg
from tilegemm.lower.distribution import Copy, Simt, Wgmma, array_distributions
from tilegemm.lang.analysis import K_MAJOR, MN_MAJOR
from tilegemm.lower.plan import BufferRole, BufferUse, barrier_plans, buffer_uses, resolve_view
from tilegemm.model.layouts import operand_specs

from . import kernels
from .examples import HOPPER, example, specs


def ops(graph, kind):
    return [op for op in graph.walk() if op.kind == kind]


def test_nested_views_compose_into_one_selection_of_the_root():
    @tg.kernel(out_shape=tg.ShapeDtype((8, 8), tg.float32), scratch_shapes=[tg.SMEM((4, 128, 64), tg.float16)])
    def views(a, c, buf):
        slot = tg.axis_index("x") % 4
        half = buf.at[slot].at[tg.ds(64, 64)]
        half[...] = tg.zeros((64, 64), tg.float16)

    graph = views.trace(tg.ShapeDtype((8, 8), tg.float16))
    (store,) = [op for op in ops(graph, "store") if op.operands[0].space == "smem"]
    view = resolve_view(store.operands[0])
    assert view.root.shape == (4, 128, 64) and view.shape == (64, 64) and view.kept == (1, 2)
    assert view.dims[0].is_index and view.dims[1].static_start == 64 and view.dims[2].static_start == 0
    assert not view.is_whole


def test_wgmma_operands_get_the_k_major_and_mn_major_layouts():
    graph = kernels.tma_wgmma().trace(*kernels.two_row_specs())
    uses = {op.attrs["name"]: buffer_uses(graph)[id(op.result)] for op in ops(graph, "alloc")
            if op.result.space == "smem"}
    assert uses == {"a_smem": BufferUse(BufferRole.MMA_A, K_MAJOR), "b_smem": BufferUse(BufferRole.MMA_B, MN_MAJOR),
                    "c_smem": BufferUse(BufferRole.PLAIN)}


def test_transposed_views_compose_into_a_selection_of_the_root_in_permuted_order():
    seen = []

    @tg.kernel(out_shape=tg.ShapeDtype((8, 8), tg.float32), scratch_shapes=[tg.SMEM((4, 64, 128), tg.float16)])
    def views(a, c, buf):
        slot = tg.axis_index("x") % 4
        seen.append(tg.transpose_ref(buf.at[slot], (1, 0)).at[tg.ds(64, 64)])   # stored columns 64..127

    views.trace(tg.ShapeDtype((8, 8), tg.float16))
    view = resolve_view(seen[0])
    assert view.root.shape == (4, 64, 128) and view.shape == (64, 64) and view.transposed
    assert view.axes == (2, 1) and view.kept == (1, 2)
    assert view.dims[0].is_index and view.dims[2].static_start == 64 and view.dims[1].static_start == 0


def test_operands_read_through_transposes_get_the_other_major_ness():
    graph = kernels.transposed_operands(256, 256, 128, "km", "nk").trace(
        *operand_specs(256, 256, 128, tg.float16, "km", "nk"))
    uses = {op.attrs["name"]: buffer_uses(graph)[id(op.result)] for op in ops(graph, "alloc")
            if op.result.space == "smem"}
    assert uses["a_smem"] == BufferUse(BufferRole.MMA_A, MN_MAJOR)
    assert uses["b_smem"] == BufferUse(BufferRole.MMA_B, K_MAJOR)


def test_barriers_arrived_on_by_warpgroups_count_one_arrival_per_warp():
    graph = kernels.warp_specialized(128, 128, 128).trace(*specs(128, 128, 128))
    plans = {op.attrs["name"]: barrier_plans(graph)[id(op.result)] for op in ops(graph, "alloc")
             if op.result.space == "barrier"}
    assert plans["empty"].per_warp and plans["empty"].hardware_count(1) == 4
    assert not plans["full"].per_warp and plans["full"].hardware_count(2) == 2


def test_array_distributions_follow_where_values_come_from():
    graph = example("hopper_v1_smem").build(64, 64, 64).trace(*specs(64, 64, 64))
    dists = array_distributions(graph)
    (dot,) = ops(graph, "dot")
    assert dists[id(dot.result)] == Simt((32, 32))
    assert Simt((32, 32)).threads == (8, 16) and Simt((32, 32)).values == (4, 2)
    assert all(dists[id(op.result)] == Copy(op.result.type.shape) for op in ops(graph, "load"))
    (loop,) = ops(graph, "fori_loop")
    assert dists[id(loop.results[0])] == Simt((32, 32)), "loop carries share the dot's distribution"


@pytest.mark.skipif("hopper_v4_tuned" not in HOPPER, reason="needs examples/hopper_v4_tuned.py")
def test_accumulator_slices_stay_wgmma_distributed():
    graph = example("hopper_v4_tuned").build(256, 256, 128).trace(*specs(256, 256, 128))
    dists = array_distributions(graph)
    assert {dists[id(op.result)] for op in ops(graph, "array_slice")} == {Wgmma((64, 64))}


def test_mixing_accumulator_and_dot_arrays_is_refused_at_the_line():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32), scratch_shapes=[tg.ACC((64, 64))])
    def mixed(a, b, c, acc):
        c[...] = acc[...] + tg.dot(a, b)

    with pytest.raises(tg.KernelError, match="test_plan.py:.*WGMMA accumulator"):
        mixed.lower(tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 64), tg.float16))


def test_generated_code_names_refs_after_the_body_parameters():
    source = kernels.tma_wgmma().lower(*kernels.two_row_specs(), arch="sm_90a").source
    assert "def one_row_of_tiles(a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer" in source
    assert "a_smem = storage.a_smem" in source and "loaded = storage.loaded" in source
