"""Every example traces and verifies at its shapes, and each rung has the structure its docstring describes."""
import functools
import glob
import inspect
import os
from collections import Counter

import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs, stored
from tilegemm.showcase import example_layouts, load_example, random_inputs, relative_error

EXAMPLES_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
HOPPER = ["hopper_v0_naive", "hopper_v1_smem", "hopper_v2_tma_wgmma", "hopper_v3_warp_specialized",
          "hopper_v4_tuned"]
BLACKWELL = ["blackwell_1_basic", "blackwell_2_warp_specialized", "blackwell_3_tiled_epilogue",
             "blackwell_4_collective", "blackwell_5_persistent", "blackwell_6_epilogue_warpgroup",
             "blackwell_7_grid_tiling"]
PERSISTENT = BLACKWELL[4:]
LADDERS = ("hopper_*.py", "blackwell_*.py")   # other examples (torch_mlp.py) are not rungs of a ladder
ALL = sorted(os.path.splitext(os.path.basename(p))[0]
             for ladder in LADDERS for p in glob.glob(os.path.join(EXAMPLES_DIR, ladder)))


@functools.lru_cache(maxsize=None)
def example(name):
    """The example module `name`, imported by path as the showcase does."""
    return load_example(os.path.join(EXAMPLES_DIR, name + ".py"))


def trace(name, shape, dtype=tg.float16, **config):
    """The verified graph of example `name` built for (m, n, k) = shape, its inputs in the example's layouts."""
    kernel = example(name).build(*shape, dtype=dtype, **config)
    return kernel.trace(*operand_specs(*shape, dtype, *example_layouts(example(name), **config)))


def kinds(ops):
    """How many ops of each kind."""
    return Counter(op.kind for op in ops)


def ops_of(graph, kind):
    """Every op of `kind` in `graph` (or under an op), nested ones included."""
    return [op for op in graph.walk() if op.kind == kind]


def allocs(graph, space):
    """The refs the graph allocates in memory space `space`."""
    return [op.result for op in ops_of(graph, "alloc") if op.result.space == space]


def nested(op):
    """Every op inside `op`'s regions."""
    return [inner for inner in op.walk() if inner is not op]


# ----------------------------------------------------------------------------- conventions

def test_both_ladders_are_present():
    assert set(HOPPER + BLACKWELL) <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_module_follows_the_example_conventions(name):
    module = example(name)
    assert module.__doc__ and len(module.__doc__.strip().splitlines()) >= 5, "a docstring explains the step"
    assert module.ARCH == ("sm_100a" if name.startswith("blackwell") else "sm_90a")
    params = list(inspect.signature(module.build).parameters.values())
    assert [p.name for p in params[:4]] == ["m", "n", "k", "dtype"] and params[3].default == tg.float16
    # the flagship's fused epilogue, block scales and b's own type say what it computes, dependent_launch and
    # trigger_dependents how it is launched: not tuned
    launch = ("dependent_launch", "trigger_dependents")
    tuned = {p.name: p.default for p in params[4:] if p.name not in ("fused", "block_scales", "b_dtype", *launch)}
    assert tuned == module.CONFIG, "CONFIG lists build's tuning defaults"
    assert set(module.SHAPES) == {"verify", "interpret", "benchmark"}
    assert any(all(d % 32 for d in shape) for shape in module.SHAPES["interpret"]), "a ragged interpret shape"


CASES = [(name, shape) for name in ALL for shape in example(name).SHAPES["verify"] + example(name).SHAPES["interpret"]]


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_example_traces_and_verifies(name, shape, dtype):
    m, n, k = shape
    graph = trace(name, shape, dtype)
    a_layout, b_layout = example_layouts(example(name))
    assert [(p.shape, p.dtype) for p in graph.inputs] == [(stored(a_layout, m, k), dtype), (stored(b_layout, n, k),
                                                                                          dtype)]
    assert [(p.shape, p.dtype) for p in graph.outputs] == [((m, n), dtype)]


# ----------------------------------------------------------------------------- the Hopper ladder

def test_v0_multiplies_straight_from_global_memory():
    graph = trace("hopper_v0_naive", (200, 136, 72))
    (dot,) = ops_of(graph, "dot")
    assert [x.space for x in dot.operands[:2]] == ["gmem", "gmem"]
    assert not ops_of(graph, "alloc") and not ops_of(graph, "wgmma")
    assert graph.config["grid"] == (7, 5)                                   # cdiv(200, 32), cdiv(136, 32)


def test_v1_stages_operands_in_shared_memory_for_a_cuda_core_dot():
    graph = trace("hopper_v1_smem", (200, 136, 72))
    (dot,) = ops_of(graph, "dot")
    assert [x.space for x in dot.operands[:2]] == ["smem", "smem"]
    assert [op.operands[0].space for op in ops_of(graph, "store")][:2] == ["smem", "smem"]
    counts = kinds(graph.walk())
    assert not counts["wgmma"] and not counts["copy_gmem_to_smem"]


def test_v2_feeds_wgmma_with_tma_through_swizzled_buffers():
    graph = trace("hopper_v2_tma_wgmma", (200, 136, 72))
    counts = kinds(graph.walk())
    assert counts["copy_gmem_to_smem"] == 2 and counts["wgmma"] == 1 and counts["copy_smem_to_gmem"] == 1
    (wgmma,) = ops_of(graph, "wgmma")
    acc, a, b = wgmma.operands
    assert acc.shape == (64, 128) and a.shape == (64, 64) and b.shape == (64, 128)
    assert tg.SwizzleTransform(128) in a.type.transforms and tg.SwizzleTransform(128) in b.type.transforms
    assert graph.config["num_threads"] == 1


def test_v3_gives_copies_and_mmas_to_different_warpgroups():
    graph = trace("hopper_v3_warp_specialized", (136, 264, 328))
    assert (graph.config["num_threads"], graph.config["thread_name"]) == (2, "wg")
    producer, consumer = [op for op in graph.body.ops if op.kind == "when"]
    assert kinds(nested(producer))["copy_gmem_to_smem"] == 2 and not kinds(nested(producer))["wgmma"]
    assert kinds(nested(consumer))["wgmma"] == 1 and not kinds(nested(consumer))["copy_gmem_to_smem"]
    assert kinds(nested(producer))["barrier_wait"] == 1                     # on `empty`, from the 2nd fill on
    assert kinds(nested(consumer))["barrier_arrive"] == 1                   # releases `empty`


def test_v4_has_two_consumers_a_deep_ring_and_moves_registers():
    graph = trace("hopper_v4_tuned", (4096, 4096, 4096))
    assert graph.config["num_threads"] == 3
    assert {(op.attrs["n"], op.attrs["action"]) for op in ops_of(graph, "set_max_registers")} == {
        (40, "decrease"), (232, "increase")}
    (wgmma,) = ops_of(graph, "wgmma")
    assert wgmma.operands[0].shape == (64, 256)                             # each consumer: half of 128 x 256
    a_smem = next(r for r in allocs(graph, "smem") if r.producer.attrs["name"] == "a_smem")
    assert a_smem.shape[0] == 4
    empty = next(r for r in allocs(graph, "barrier") if r.producer.attrs["name"] == "empty")
    assert empty.type.barrier.num_arrivals == 2                             # both consumers release a slot


def test_v4_runs_the_seeds_configuration_and_needs_two_stages():
    graph = trace("hopper_v4_tuned", (8192, 8192, 8192), tile_n=192, stages=2)
    assert ops_of(graph, "wgmma")[0].operands[0].shape == (64, 192)
    with pytest.raises(ValueError, match="at least 2 stages"):
        example("hopper_v4_tuned").build(256, 256, 256, stages=1)


def test_the_transposed_operands_example_takes_a_linear_layers_weight_as_stored():
    graph = trace("hopper_transposed_operands", (200, 136, 72))
    assert [p.shape for p in graph.inputs] == [(200, 72), (136, 72)]            # x [M, K], w [N, K]
    copies = ops_of(graph, "copy_gmem_to_smem")
    assert [c.operands[1].shape for c in copies] == [(128, 64), (128, 64)]      # TMA tiles as stored
    assert not any(c.operands[1].type.permutation for c in copies)
    (wgmma,) = ops_of(graph, "wgmma")
    assert wgmma.operands[2].producer.kind == "transpose_ref" and wgmma.operands[2].shape == (64, 128)


def test_the_transposed_operands_example_reads_an_a_given_as_k_by_m_through_a_transpose():
    graph = trace("hopper_transposed_operands", (200, 136, 72), a_layout="km", b_layout="kn")
    assert [p.shape for p in graph.inputs] == [(72, 200), (72, 136)]            # A.T [K, M], B [K, N]
    (wgmma,) = ops_of(graph, "wgmma")
    a, b = wgmma.operands[1:]
    assert a.producer.kind == "transpose_ref" and a.shape == (128, 64) and b.producer.kind == "alloc"


# ----------------------------------------------------------------------------- the Blackwell ladder

@pytest.mark.parametrize("name", BLACKWELL)
def test_blackwell_rungs_accumulate_in_tmem_with_tcgen05(name):
    graph = trace(name, (200, 136, 72))
    assert ops_of(graph, "tcgen05_mma") and allocs(graph, "tmem")
    assert ops_of(graph, "async_load_tmem") and ops_of(graph, "wait_load_tmem")
    assert not ops_of(graph, "wgmma")
    assert bool(ops_of(graph, "core_map")) == (name != "blackwell_1_basic")


def test_blackwell_basic_pipelines_with_emit_pipeline():
    graph = trace("blackwell_1_basic", (136, 264, 328))
    (scope,) = ops_of(graph, "scope")                                       # the pipeline's stages and barriers
    (loop,) = [op for op in scope.regions[0].ops if op.kind == "fori_loop"]
    assert kinds(nested(loop))["tcgen05_mma"] == 1
    (mma,) = ops_of(graph, "tcgen05_mma")
    assert mma.arg("barrier").type.barrier.orders_tensor_core


def test_blackwell_warp_specialization_gives_tma_and_mma_to_different_warps():
    graph = trace("blackwell_2_warp_specialized", (136, 264, 328))
    (core_map,) = ops_of(graph, "core_map")
    tma_warp, mma_warp = [op for op in core_map.regions[0].ops if op.kind == "when"]
    assert kinds(nested(tma_warp))["copy_gmem_to_smem"] == 2 and not kinds(nested(tma_warp))["tcgen05_mma"]
    assert kinds(nested(mma_warp))["tcgen05_mma"] == 1 and kinds(nested(mma_warp))["tcgen05_commit_arrive"] == 1


def test_blackwell_tiled_epilogue_stores_column_slices_double_buffered():
    graph = trace("blackwell_3_tiled_epilogue", (200, 136, 72))
    stores = ops_of(graph, "copy_smem_to_gmem")
    assert [s.operands[0].shape for s in stores] == [(128, 64), (128, 64)]
    assert {(w.attrs["n"], w.attrs["read_only"]) for w in ops_of(graph, "wait_smem_to_gmem")} == {(1, True),
                                                                                                (0, True)}


def test_blackwell_collective_mma_pairs_two_blocks():
    graph = trace("blackwell_4_collective", (4096, 8192, 4096))
    assert graph.config["cluster"] == (2,) and graph.config["grid"] == (16, 32)    # 256 x 256 per pair
    copies = ops_of(graph, "copy_gmem_to_smem")
    assert sorted(c.attrs["partitioned_axis"] for c in copies) == [0, 1]
    assert all(c.attrs["collective_axes"] == ("cluster",) for c in copies)
    (mma,) = ops_of(graph, "tcgen05_mma")
    assert mma.attrs["collective_axis"] == "cluster"
    (tmem,) = allocs(graph, "tmem")
    assert tmem.type.collective and tmem.shape == (128, 256)


@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_rungs_loop_over_tiles_with_one_cluster_per_sm_pair(name):
    graph = trace(name, (4096, 8192, 4096))
    sms = tg.model.get_device("b200").sms
    assert graph.config["grid"] == (sms // 2,) and graph.config["cluster"] == (2,)   # by default, a B200's
    tile_loops = [op for op in ops_of(graph, "fori_loop") if not isinstance(op.operands[1], int)]
    assert tile_loops                                                          # nd_loop: this cluster's tiles
    assert trace(name, (200, 136, 72)).config["grid"] == (1,)                # no idle clusters
    assert trace(name, (4096, 8192, 4096), num_clusters=4).config["grid"] == (4,)


@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_rungs_take_the_deepest_ring_that_fits_in_shared_memory(name):
    stages = allocs(trace(name, (4096, 8192, 4096)), "smem")[0].shape[0]
    assert stages == 6                          # 6 x 32 KiB of A and B stages beside 32 KiB of epilogue buffers
    with pytest.raises(tg.KernelError, match="shared memory"):
        trace(name, (4096, 8192, 4096), max_concurrent_steps=stages + 1)


def test_the_persistent_rung_loads_the_next_tiles_first_steps_before_the_warps_meet():
    graph = trace("blackwell_5_persistent", (1032, 520, 1000), num_clusters=2)   # 16 K steps: more than a ring
    (core_map,) = ops_of(graph, "core_map")
    tma_warp = next(op for op in core_map.regions[0].ops if op.kind == "when")
    assert kinds(nested(tma_warp))["copy_gmem_to_smem"] == 6               # tile 0's first steps, the rest, the next's
    (acc_free,) = [b for b in allocs(graph, "barrier") if b.type.barrier.collective_axes]
    assert acc_free.type.barrier.orders_tensor_core


@pytest.mark.parametrize("name", PERSISTENT[1:])
def test_each_role_of_the_epilogue_warpgroup_rungs_walks_the_tiles_on_its_own(name):
    graph = trace(name, (4096, 8192, 4096))
    (core_map,) = ops_of(graph, "core_map")
    tile_loops = [op for op in ops_of(graph, "fori_loop") if not isinstance(op.operands[1], int)]
    assert len(tile_loops) == 3                                               # the TMA warp, MMA warp, epilogue
    assert sum(loop in nested(core_map) for loop in tile_loops) == 2          # no warp meets another per tile


@pytest.mark.parametrize("name", PERSISTENT[1:])
def test_epilogue_warpgroup_double_buffers_the_accumulator(name):
    graph = trace(name, (4096, 8192, 4096))
    assert graph.config["num_threads"] == 2
    (tmem,) = allocs(graph, "tmem")
    assert tmem.shape == (128, 512)                                          # two 256-column halves
    cluster_barriers = [b for b in allocs(graph, "barrier") if b.type.barrier.collective_axes]
    assert [b.type.barrier.collective_axes for b in cluster_barriers] == [("cluster",)]


@pytest.mark.parametrize("name", PERSISTENT[1:])
def test_epilogue_warpgroup_stores_through_four_buffers(name):
    graph = trace(name, (4096, 8192, 4096))
    stores = ops_of(graph, "copy_smem_to_gmem")
    assert {s.operands[0].shape for s in stores} == {(128, 32)} and len(stores) == 8     # 256 columns per tile
    assert {w.attrs["n"] for w in ops_of(graph, "wait_smem_to_gmem")} == {3, 0}


def test_grid_tiling_orders_tiles_with_planar_snake():
    snake = trace("blackwell_7_grid_tiling", (4096, 8192, 4096))
    rows = trace("blackwell_6_epilogue_warpgroup", (4096, 8192, 4096))
    assert ops_of(snake, "select") and not ops_of(rows, "select")


@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_rungs_are_correct_with_several_tiles_per_cluster(name):
    shape = (1032, 520, 328)                 # 5 x 3 pair tiles over 2 clusters: up to 8 tiles each
    a, b = random_inputs(*shape, tg.float16)
    out = example(name).build(*shape, num_clusters=2)(a, b, interpret=True)
    assert relative_error(out, a, b) < 1e-2
