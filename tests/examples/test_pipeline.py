"""emit_pipeline and emit_pipeline_warp_specialized: the ops they record, what they reject, and matmuls on them."""
from collections import Counter

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang.pipeline import compute_registers
from tilegemm.showcase import random_inputs, relative_error

TILE = 64


def swizzled(minor_elems):
    """The MMA layout of an f16 tile whose contiguous dimension holds `minor_elems` elements."""
    return tg.mma_transforms(minor_elems, tg.float16)


def pipelined_matmul(m, n, k, *, stages=3, delay_release=1, in_flight=1):
    """One warpgroup per 64x64 tile: emit_pipeline feeds WGMMAs, `in_flight` of which stay unawaited per step."""

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(tg.cdiv(m, TILE), tg.cdiv(n, TILE)),
               grid_names=("m", "n"), scratch_shapes=[tg.ACC((TILE, TILE)), tg.SMEM((TILE, TILE), tg.float16)])
    def matmul(a, b, c, acc, c_smem):
        mi, ni = tg.axis_index("m"), tg.axis_index("n")

        def step(indices, a_smem, b_smem):
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(in_flight)

        tg.emit_pipeline(step, grid=(tg.cdiv(k, TILE),),
                         in_specs=[tg.BlockSpec((TILE, TILE), lambda ki: (mi, ki), transforms=swizzled(TILE)),
                                   tg.BlockSpec((TILE, TILE), lambda ki: (ki, ni), transforms=swizzled(TILE))],
                         max_concurrent_steps=stages, delay_release=delay_release)(a, b)
        tg.wgmma_wait(0)
        c_smem[...] = acc[...].astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[tg.ds(mi * TILE, TILE), tg.ds(ni * TILE, TILE)])
        tg.wait_smem_to_gmem(0)
    return matmul


def warp_specialized_matmul(m, n, k, *, stages=2, delay_release=0, multicast=False):
    """Two compute warpgroups, each a 64x64 half of a 64x128 tile; B multicast over a 2-block cluster if asked."""
    cluster = dict(cluster=(2,), cluster_names=("x",)) if multicast else {}
    rows_per_cluster = 2 * TILE if multicast else TILE

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16),
               grid=(tg.cdiv(m, rows_per_cluster), tg.cdiv(n, 2 * TILE)), grid_names=("m", "n"),
               num_threads=3, thread_name="wg", scratch_shapes=[tg.SMEM((2, TILE, TILE), tg.float16)], **cluster)
    def matmul(a, b, c, c_smem):
        wg = tg.axis_index("wg")
        mi = tg.axis_index("m") * 2 + tg.axis_index("x") if multicast else tg.axis_index("m")
        ni = tg.axis_index("n")
        half = tg.ds(wg * TILE, TILE)

        def step(indices, a_smem, b_smem, acc):
            tg.wgmma(acc, a_smem, b_smem.at[:, half])
            tg.wgmma_wait(delay_release)

        def compute(run):
            def with_accumulator(acc):
                run(acc)
                tg.wgmma_wait(0)
                mine = c_smem.at[wg]   # each compute warpgroup stores its half of the tile from a buffer of its own
                mine[...] = acc[...].astype(tg.float16)
                tg.commit_smem()
                tg.copy_smem_to_gmem(mine, c.at[tg.ds(mi * TILE, TILE), tg.ds(ni * 2 * TILE + wg * TILE, TILE)])
                tg.wait_smem_to_gmem(0)
            tg.run_scoped(with_accumulator, tg.ACC((TILE, TILE)))

        tg.emit_pipeline_warp_specialized(
            step, grid=(tg.cdiv(k, TILE),),
            in_specs=[tg.BlockSpec((TILE, TILE), lambda ki: (mi, ki), transforms=swizzled(TILE)),
                      tg.BlockSpec((TILE, 2 * TILE), lambda ki: (ki, ni), transforms=swizzled(2 * TILE),
                                   collective_axes=("x",) if multicast else ())],
            num_compute_wgs=2, wg_axis="wg", max_concurrent_steps=stages, delay_release=delay_release,
            compute_context=compute)(a, b)
    return matmul


def trace(kernel, m, n, k):
    """The verified graph of a matmul kernel for f16 a [m, k] and b [k, n]."""
    return kernel.trace(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16))


def ops_in(op):
    """Every op nested in `op`'s regions."""
    return [inner for inner in op.walk() if inner is not op]


def only(ops, kind):
    """The single op of `kind` among `ops`."""
    (op,) = [o for o in ops if o.kind == kind]
    return op


# ----------------------------------------------------------------------------- what emit_pipeline records

def test_pipeline_allocates_a_ring_prefetches_it_and_loops_over_the_grid():
    graph = trace(pipelined_matmul(200, 136, 328, stages=3), 200, 136, 328)     # 6 K steps
    scope = only(graph.body.ops, "scope")
    ops = scope.regions[0].ops
    rings = [op.result for op in ops if op.kind == "alloc" and op.result.space == "smem"]
    assert [r.shape for r in rings] == [(3, 64, 64), (3, 64, 64)]
    assert all(tg.SwizzleTransform(128) in r.type.transforms for r in rings)
    (ready,) = [op.result for op in ops if op.kind == "alloc" and op.result.space == "barrier"]
    assert (ready.type.barrier.num_arrivals, ready.type.barrier.num_barriers) == (2, 3)
    assert Counter(op.kind for op in ops)["copy_gmem_to_smem"] == 6              # prologue: 3 steps x 2 inputs
    loop = only(ops, "fori_loop")
    assert loop.operands[:2] == (0, 6)
    body = loop.regions[0].ops
    order = [op.kind for op in body]
    assert order.index("barrier_wait") < order.index("wgmma") < order.index("when")   # wait, body, refill
    refill = only(body, "when")
    assert Counter(op.kind for op in ops_in(refill))["copy_gmem_to_smem"] == 2


def test_a_pipeline_no_longer_than_its_ring_shrinks_it_and_never_refills():
    graph = trace(pipelined_matmul(200, 136, 72, stages=4), 200, 136, 72)       # 2 K steps
    scope = only(graph.body.ops, "scope")
    rings = [op.result for op in scope.regions[0].ops if op.kind == "alloc" and op.result.space == "smem"]
    assert [r.shape[0] for r in rings] == [2, 2]
    assert not [op for op in ops_in(only(scope.regions[0].ops, "fori_loop")) if op.kind == "when"]


@pytest.mark.parametrize("stages,delay_release,in_flight", [(3, 1, 1), (2, 0, 0), (1, 0, 0), (4, 2, 1)])
@pytest.mark.parametrize("shape", [(200, 136, 72), (136, 264, 328), (40, 24, 8)])
def test_pipelined_matmul_matches_numpy(stages, delay_release, in_flight, shape):
    a, b = random_inputs(*shape, tg.float16)
    out = pipelined_matmul(*shape, stages=stages, delay_release=delay_release, in_flight=in_flight)(
        a, b, interpret=True)
    assert relative_error(out, a, b) < 1e-2


def test_without_delay_release_an_unawaited_wgmma_races_with_the_refill():
    a, b = random_inputs(64, 64, 256, tg.float16)
    with pytest.raises(tg.RaceError, match="wgmma"):
        pipelined_matmul(64, 64, 256, stages=2, delay_release=0, in_flight=1)(a, b, interpret=True)


def test_multidimensional_grids_run_in_row_major_order():
    """A pipeline over a (3, 2) grid of 8x64 blocks copies x block by block; the body sees (i, j) indices."""

    @tg.kernel(out_shape=tg.ShapeDtype((24, 128), tg.float16))
    def copy(x, y):
        def step(indices, x_smem):
            i, j = indices
            y.at[tg.ds(i * 8, 8), tg.ds(j * 64, 64)][...] = x_smem[...]

        tg.emit_pipeline(step, grid=(3, 2), in_specs=[tg.BlockSpec((8, 64), lambda i, j: (i, j))],
                         max_concurrent_steps=2)(x)

    x = np.arange(24 * 128).reshape(24, 128).astype(np.float16)
    np.testing.assert_array_equal(copy(x, interpret=True), x)


# ----------------------------------------------------------------------------- the warp-specialized variant

def test_warp_specialized_pipeline_splits_memory_and_compute_threads():
    graph = trace(warp_specialized_matmul(200, 136, 328, stages=2), 200, 136, 328)
    scope = only(graph.body.ops, "scope")
    ops = scope.regions[0].ops
    ready, consumed = [op.result.type.barrier for op in ops if op.kind == "alloc" and op.result.space == "barrier"]
    assert (ready.num_arrivals, consumed.num_arrivals, consumed.num_barriers) == (2, 2, 2)
    memory, compute = [op for op in ops if op.kind == "when"]
    memory_ops, compute_ops = Counter(o.kind for o in ops_in(memory)), Counter(o.kind for o in ops_in(compute))
    # one wait in the loop, then one per stage to drain the ring before the pipeline returns
    assert memory_ops["copy_gmem_to_smem"] == 2 and memory_ops["barrier_wait"] == 1 + 2 and not memory_ops["wgmma"]
    assert compute_ops["wgmma"] == 1 and compute_ops["barrier_arrive"] == 1 and not compute_ops["copy_gmem_to_smem"]
    assert [(o.attrs["n"], o.attrs["action"]) for o in ops_in(memory) + ops_in(compute)
            if o.kind == "set_max_registers"] == [(40, "decrease"), (232, "increase")]


def test_multicast_blocks_release_stages_across_the_cluster():
    graph = trace(warp_specialized_matmul(264, 136, 328, multicast=True), 264, 136, 328)
    consumed = [op.result.type.barrier for op in graph.walk()
                if op.kind == "alloc" and op.result.space == "barrier"][-1]
    assert consumed.collective_axes == ("x",)
    b_copies = [op for op in graph.walk() if op.kind == "copy_gmem_to_smem" and op.attrs["collective_axes"]]
    assert [op.operands[1].shape for op in b_copies] == [(64, 128)]


@pytest.mark.parametrize("stages,delay_release,multicast", [(2, 0, False), (3, 1, False), (2, 0, True)])
@pytest.mark.parametrize("shape", [(200, 136, 72), (136, 264, 328), (40, 24, 8)])
def test_warp_specialized_matmul_matches_numpy(stages, delay_release, multicast, shape):
    a, b = random_inputs(*shape, tg.float16)
    kernel = warp_specialized_matmul(*shape, stages=stages, delay_release=delay_release, multicast=multicast)
    assert relative_error(kernel(a, b, interpret=True), a, b) < 1e-2


def persistent_warp_specialized_matmul(m, n, k, *, blocks, stages, delay_release):
    """The pipeline run once per 64x128 output tile inside an nd_loop, `blocks` blocks walking all tiles."""
    m_tiles, n_tiles = tg.cdiv(m, TILE), tg.cdiv(n, 2 * TILE)

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(blocks,), grid_names=("block",),
               num_threads=3, thread_name="wg", scratch_shapes=[tg.SMEM((2, TILE, TILE), tg.float16)])
    def matmul(a, b, c, c_smem):
        wg = tg.axis_index("wg")
        half = tg.ds(wg * TILE, TILE)

        @tg.nd_loop((m_tiles, n_tiles), collective_axes="block")
        def _(info):
            mi, ni = info.index

            def step(indices, a_smem, b_smem, acc):
                tg.wgmma(acc, a_smem, b_smem.at[:, half])
                tg.wgmma_wait(delay_release)

            def compute(run):
                def with_accumulator(acc):
                    run(acc)
                    tg.wgmma_wait(0)
                    mine = c_smem.at[wg]   # each compute warpgroup stores its half of the tile from a buffer of its own
                    tg.wait_smem_to_gmem(0, wait_read_only=True)
                    mine[...] = acc[...].astype(tg.float16)
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(mine, c.at[tg.ds(mi * TILE, TILE), tg.ds(ni * 2 * TILE + wg * TILE, TILE)])
                tg.run_scoped(with_accumulator, tg.ACC((TILE, TILE)))

            tg.emit_pipeline_warp_specialized(
                step, grid=(tg.cdiv(k, TILE),),
                in_specs=[tg.BlockSpec((TILE, TILE), lambda ki: (mi, ki), transforms=swizzled(TILE)),
                          tg.BlockSpec((TILE, 2 * TILE), lambda ki: (ki, ni), transforms=swizzled(2 * TILE))],
                num_compute_wgs=2, wg_axis="wg", max_concurrent_steps=stages, delay_release=delay_release,
                compute_context=compute)(a, b)

        @tg.when(wg < 2)
        def _():
            tg.wait_smem_to_gmem(0)
    return matmul


@pytest.mark.parametrize("stages,delay_release", [(2, 0), (3, 1)])
@pytest.mark.parametrize("seed", [None, 3])
def test_the_warp_specialized_pipeline_can_run_once_per_tile_of_a_persistent_loop(stages, delay_release, seed):
    shape = (200, 264, 328)  # 4 x 3 tiles over 2 blocks: each block runs the pipeline 6 times
    a, b = random_inputs(*shape, tg.float16)
    kernel = persistent_warp_specialized_matmul(*shape, blocks=2, stages=stages, delay_release=delay_release)
    assert relative_error(kernel(a, b, interpret=True, seed=seed), a, b) < 1e-2


def test_compute_threads_share_the_registers_the_memory_thread_gives_up():
    assert compute_registers(num_threads=3, num_compute=2, memory_registers=40) == 232   # 3 x 168 at launch
    assert compute_registers(num_threads=2, num_compute=1, memory_registers=40) == 256   # capped by setmaxnreg
    assert compute_registers(num_threads=4, num_compute=3, memory_registers=40) == 152


# ----------------------------------------------------------------------------- what the helpers reject

def spec():
    """A 64x64 block spec for rejection tests."""
    return tg.BlockSpec((64, 64), lambda ki: (0, ki))


def test_delay_release_must_leave_a_stage_to_prefetch_into():
    with pytest.raises(tg.KernelError, match="delay_release=2"):
        tg.emit_pipeline(lambda idx, s: None, grid=(4,), in_specs=[spec()], max_concurrent_steps=2, delay_release=2)


def test_multicast_needs_the_warp_specialized_pipeline():
    multicast = tg.BlockSpec((64, 64), lambda ki: (0, ki), collective_axes="x")
    with pytest.raises(tg.KernelError, match="emit_pipeline_warp_specialized"):
        tg.emit_pipeline(lambda idx, s: None, grid=(4,), in_specs=[multicast])


@pytest.mark.parametrize("shape", [(None, None), (64, 0), (64, 32.0)])
def test_block_shapes_are_positive_ints_or_none_with_at_least_one_int(shape):
    with pytest.raises(tg.KernelError, match=r"positive ints and None \(a squeezed dimension\), with at least one int"):
        tg.BlockSpec(shape, lambda ki: (0, ki))


@pytest.mark.parametrize("warp_specialized", [False, True], ids=["emit_pipeline", "warp_specialized"])
def test_a_none_block_dimension_is_squeezed_from_the_blocks_the_body_gets(warp_specialized):
    seen = []

    def body(indices, block):
        seen.append(tuple(block.shape))

    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), num_threads=2 if warp_specialized else 1,
               thread_name="wg" if warp_specialized else None)
    def batched(a, c):
        specs = [tg.BlockSpec((None, 64, 64), lambda ki: (2, 0, ki))]
        if warp_specialized:
            tg.emit_pipeline_warp_specialized(body, grid=(2,), in_specs=specs, num_compute_wgs=1, wg_axis="wg")(a)
        else:
            tg.emit_pipeline(body, grid=(2,), in_specs=specs)(a)

    graph = batched.trace(tg.ShapeDtype((3, 64, 128), tg.float16))
    assert seen == [(64, 64)]
    copies = [op for op in graph.walk() if op.kind == "copy_gmem_to_smem"]
    assert {tuple(op.operands[0].shape) for op in copies} == {(1, 64, 64)}, "the batch element is a box of size 1"


def test_a_pipeline_takes_one_gmem_ref_per_spec():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16))
    def body(a, b, c):
        tg.emit_pipeline(lambda idx, s: None, grid=(2,), in_specs=[spec()])(a, b)

    with pytest.raises(tg.KernelError, match="1 in_specs but was called with 2 refs"):
        body.trace(tg.ShapeDtype((64, 128), tg.float16), tg.ShapeDtype((128, 64), tg.float16))


def test_index_maps_give_one_block_index_per_dimension():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16))
    def body(a, c):
        tg.emit_pipeline(lambda idx, s: None, grid=(2,), in_specs=[tg.BlockSpec((64, 64), lambda ki: ki)])(a)

    with pytest.raises(tg.KernelError, match="1 block indices for a 2-d block_shape"):
        body.trace(tg.ShapeDtype((64, 128), tg.float16))


def test_pipeline_bodies_carry_no_values():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16))
    def body(a, c):
        tg.emit_pipeline(lambda idx, s: idx, grid=(2,), in_specs=[spec()])(a)

    with pytest.raises(tg.KernelError, match="no carries"):
        body.trace(tg.ShapeDtype((64, 128), tg.float16))


def test_compute_context_runs_the_loop_exactly_once():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), num_threads=2, thread_name="wg")
    def body(a, c):
        tg.emit_pipeline_warp_specialized(lambda idx, s: None, grid=(2,), in_specs=[spec()], num_compute_wgs=1,
                                          wg_axis="wg", compute_context=lambda run: None)(a)

    with pytest.raises(tg.KernelError, match="exactly once"):
        body.trace(tg.ShapeDtype((64, 128), tg.float16))


def test_warp_specialized_pipeline_needs_one_more_thread_than_compute_warpgroups():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), num_threads=2, thread_name="wg")
    def body(a, c):
        tg.emit_pipeline_warp_specialized(lambda idx, s: None, grid=(2,), in_specs=[spec()], num_compute_wgs=2,
                                          wg_axis="wg")(a)

    with pytest.raises(tg.KernelError, match="needs num_threads=3"):
        body.trace(tg.ShapeDtype((64, 128), tg.float16))
