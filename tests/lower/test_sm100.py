"""The Blackwell (sm_100a) back end, checked without Blackwell hardware.

No Blackwell GPU is available to this project, so no test here runs a kernel:
every examples/blackwell_*.py rung is lowered and compiled for sm_100a on the
CPU, and the instructions its rung needs are asserted in its PTX and SASS.
What the kernels compute is checked by the numpy interpreter, which runs the
same graphs (tests/interpret, tests/examples).
"""
import re

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lang import dtypes
from tilegemm.lang.types import MemorySpace, RefType
from tilegemm.lower import tmem
from tilegemm.lower.binutils import find_tool

from . import kernels
from .examples import BLACKWELL, example, ragged_shape, specs

if not BLACKWELL:
    pytest.skip("no examples/blackwell_*.py", allow_module_level=True)

needs_nvdisasm = pytest.mark.skipif(find_tool("nvdisasm") is None,
                                    reason="SASS needs nvdisasm (the nvidia-cuda-nvdisasm wheel)")


def verify_shape(name):
    return example(name).SHAPES["verify"][0]


def lower(name, shape):
    m, n, k = shape
    return example(name).build(m, n, k).lower(*specs(m, n, k), arch="sm_100a")


def ops(graph, kind):
    return [op for op in graph.walk() if op.kind == kind]


def is_pair_rung(graph):
    return any(op.attrs["collective_axis"] for op in ops(graph, "tcgen05_mma"))


def required_ptx(graph):
    """The PTX instructions a rung must contain, read off its graph."""
    need = {".target sm_100a"}
    if ops(graph, "tcgen05_mma"):
        need |= {"tcgen05.mma.", "tcgen05.commit."}
    if is_pair_rung(graph):
        need |= {"tcgen05.mma.cta_group::2", "tcgen05.commit.cta_group::2", "multicast::cluster",
                 "tcgen05.alloc.cta_group::2", "tcgen05.dealloc.cta_group::2"}
    elif ops(graph, "tcgen05_mma"):
        need |= {"tcgen05.mma.cta_group::1", "tcgen05.commit.cta_group::1"}
    if any(op.result.space == MemorySpace.TMEM for op in ops(graph, "alloc")):
        need |= {"tcgen05.alloc.", "tcgen05.relinquish_alloc_permit.", "tcgen05.dealloc."}
    if ops(graph, "async_load_tmem"):
        need |= {"tcgen05.ld.sync.aligned.32x32b", "tcgen05.wait::ld"}
    if ops(graph, "copy_gmem_to_smem"):
        need.add("cp.async.bulk.tensor.2d.shared::")                  # TMA loads
    if any(op.attrs["partitioned_axis"] is not None for op in ops(graph, "copy_gmem_to_smem")):
        need.add("complete_tx::bytes.L2::cache_hint.cta_group::2")      # lands on the leader's barrier
    if ops(graph, "copy_smem_to_gmem"):
        need.add("cp.async.bulk.tensor.2d.global.shared::cta")
    return need


@pytest.fixture(scope="module", params=[(name, kind) for name in BLACKWELL for kind in ("verify", "ragged")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def compiled_example(request):
    name, kind = request.param
    lowered = lower(name, verify_shape(name) if kind == "verify" else ragged_shape(name))
    return lowered, lowered.compile()


# ----------------------------------------------------------------------------- compiled rungs

def test_every_rung_compiles_for_sm100a_with_the_instructions_it_needs(compiled_example):
    lowered, compiled = compiled_example
    missing = {ins for ins in required_ptx(lowered.graph) if ins not in compiled.ptx}
    assert not missing, f"{lowered.generated.entry}: PTX lacks {missing}"
    assert compiled.arch == "sm_100a" and lowered.generated.backend == "sm100"


def test_only_the_2cta_rungs_run_in_clusters_and_issue_pair_instructions(compiled_example):
    lowered, compiled = compiled_example
    if not is_pair_rung(lowered.graph):
        assert "cta_group::2" not in compiled.ptx and lowered.generated.launch.cluster == (1, 1, 1)
    else:
        assert lowered.generated.launch.cluster == (2, 1, 1)


def test_no_rung_spills_registers(compiled_example):
    _, compiled = compiled_example
    r = compiled.resources
    assert 0 < r.registers <= 255 and not r.spills


@needs_nvdisasm
@pytest.mark.parametrize("name", BLACKWELL)
def test_sass_shows_blackwell_tensor_core_tensor_memory_and_tma_instructions(name):
    lowered = lower(name, verify_shape(name))
    sass = lowered.compile().sass             # the module fixture compiled it: a memory-cache hit
    expected = {"UTCHMMA", "UTCBAR", "LDTM", "UTMALDG.2D", "UTMASTG.2D"}
    if is_pair_rung(lowered.graph):
        expected |= {"UTCHMMA.2CTA", "UTCBAR.2CTA.MULTICAST", "UTMALDG.2D.2CTA"}
    missing = {ins for ins in expected if not re.search(rf"\b{re.escape(ins)}\b", sass)}
    assert not missing, f"{name}: SASS lacks {missing}"
    if not is_pair_rung(lowered.graph):
        assert ".2CTA" not in sass


# ----------------------------------------------------------------------------- paths the ladder does not take

def multicast_pair_of_blocks(m, n, k, tile=128, tile_k=64):
    """Two blocks of a cluster compute vertically adjacent tiles with 1-CTA MMAs and share B's tile:
    each fetches half of it and TMA multicasts it to both."""
    f16 = tg.float16

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), f16), grid=(tg.cdiv(m, 2 * tile), tg.cdiv(n, tile)),
               grid_names=("mc", "n"), cluster=(2,), cluster_names=("cm",),
               scratch_shapes=dict(a_smem=tg.SMEM((tile, tile_k), f16, transforms=tg.mma_transforms(tile_k, f16)),
                                   b_smem=tg.SMEM((tile_k, tile), f16, transforms=tg.mma_transforms(tile, f16)),
                                   acc_tmem=tg.TMEM((tile, tile), tg.float32),
                                   c_smem=tg.SMEM((tile, tile), f16, transforms=tg.mma_transforms(tile, f16)),
                                   loaded=tg.Barrier(num_arrivals=2),
                                   mma_done=tg.Barrier(orders_tensor_core=True),
                                   consumed=tg.ClusterBarrier(collective_axes=("cm",))))
    def shared_b(a, b, c, a_smem, b_smem, acc_tmem, c_smem, loaded, mma_done, consumed):
        rows = tg.ds((tg.axis_index("mc") * 2 + tg.axis_index("cm")) * tile, tile)
        cols = tg.ds(tg.axis_index("n") * tile, tile)

        def step(ki, _):
            ks = tg.ds(ki * tile_k, tile_k)
            tg.copy_gmem_to_smem(a.at[rows, ks], a_smem, loaded.at[0])
            tg.copy_gmem_to_smem(b.at[ks, cols], b_smem, loaded.at[0], collective_axes="cm")
            tg.barrier_wait(loaded.at[0])
            tg.tcgen05_mma(acc_tmem, a_smem, b_smem, mma_done.at[0], accumulate=ki > 0)
            tg.barrier_wait(mma_done.at[0])
            tg.barrier_arrive(consumed.at[0])     # both blocks' MMAs are done with b_smem ...
            tg.barrier_wait(consumed.at[0])       # ... before the next multicast overwrites it
        tg.fori_loop(0, tg.cdiv(k, tile_k), step, None)
        acc = tg.async_load_tmem(acc_tmem)
        tg.wait_load_tmem()
        c_smem[...] = acc.astype(f16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(c_smem, c.at[rows, cols])
        tg.wait_smem_to_gmem(0)
    return shared_b


def test_tma_multicast_feeds_single_block_tcgen05_mmas():
    """The interpreter says the kernel computes a @ b; the sm_100a build multicasts B and issues 1-CTA MMAs."""
    m, n, k = 256, 128, 192
    kernel = multicast_pair_of_blocks(m, n, k)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    out = kernel(a, b, interpret=True)
    np.testing.assert_allclose(out.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2,
                               atol=5e-2)
    compiled = kernel.lower(*specs(m, n, k), arch="sm_100a").compile()
    load = re.search(r"cp\.async\.bulk\.tensor\.\S*multicast::cluster", compiled.ptx)
    assert load and "tcgen05.mma.cta_group::1" in compiled.ptx and "cta_group::2" not in compiled.ptx


def relu_tile_to_gmem(m, n, k, tile=128, tile_k=64):
    """One 128x128 tile per block; the accumulator is read with a synchronous TMEM load (acc_tmem[...]) and
    stored to GMEM straight from registers, clipped at the array's edge."""
    f16 = tg.float16

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float32), grid=(tg.cdiv(m, tile), tg.cdiv(n, tile)),
               grid_names=("m", "n"),
               scratch_shapes=dict(a_smem=tg.SMEM((tile, tile_k), f16, transforms=tg.mma_transforms(tile_k, f16)),
                                   b_smem=tg.SMEM((tile_k, tile), f16, transforms=tg.mma_transforms(tile, f16)),
                                   acc_tmem=tg.TMEM((tile, tile), tg.float32),
                                   loaded=tg.Barrier(num_arrivals=2), mma_done=tg.Barrier(orders_tensor_core=True)))
    def relu_tile(a, b, c, a_smem, b_smem, acc_tmem, loaded, mma_done):
        rows = tg.ds(tg.axis_index("m") * tile, tile)
        cols = tg.ds(tg.axis_index("n") * tile, tile)

        kernels.tcgen05_main_loop(a.at[rows, :], b.at[:, cols], a_smem, b_smem, acc_tmem, loaded, mma_done, k)
        c.at[rows, cols][...] = tg.maximum(acc_tmem[...], 0.0)
    return relu_tile


def test_tmem_values_can_be_stored_to_gmem_from_registers():
    """The interpreter says the kernel computes relu(a @ b); the sm_100a build loads TMEM and stores with st.global."""
    m, n, k = 200, 136, 72
    kernel = relu_tile_to_gmem(m, n, k)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    expected = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0.0)
    np.testing.assert_allclose(kernel(a, b, interpret=True), expected, rtol=1e-5, atol=1e-5)
    compiled = kernel.lower(*specs(m, n, k), arch="sm_100a").compile()
    assert "tcgen05.ld" in compiled.ptx and "st.global" in compiled.ptx and not compiled.resources.spills


# ----------------------------------------------------------------------------- generated source

@pytest.fixture(scope="module", params=BLACKWELL)
def lowered_example(request):
    return lower(request.param, verify_shape(request.param))


def test_source_quotes_the_user_line_of_every_operation_with_an_effect(lowered_example):
    effects = {"tcgen05_mma", "tcgen05_commit_arrive", "async_load_tmem", "wait_load_tmem", "copy_gmem_to_smem",
               "copy_smem_to_gmem", "barrier_wait", "barrier_arrive", "store", "commit_smem", "wait_smem_to_gmem",
               "fori_loop", "core_map"}
    for op in lowered_example.graph.walk():
        if op.kind in effects:
            assert f"# {op.loc}: " in lowered_example.source, f"{op.kind} at {op.loc}"
    assert "tg.tcgen05_mma(" in lowered_example.source


def test_features_name_the_blackwell_paths_each_rung_uses(lowered_example):
    features = set(lowered_example.features)
    assert {"tma", "tmem", "tcgen05.mma", "tcgen05.commit", "tcgen05.ld"} <= features
    assert ("2cta" in features) == is_pair_rung(lowered_example.graph)


def test_tmem_is_allocated_once_at_kernel_start_and_freed_at_the_end(lowered_example):
    source = lowered_example.source
    used = sum(op.result.type.shape[1] for op in ops(lowered_example.graph, "alloc")
               if op.result.space == MemorySpace.TMEM)
    (columns,) = map(int, re.findall(r"tmem_allocator\.allocate\((\d+)\)", source))
    assert columns >= used and columns & (columns - 1) == 0
    assert source.index("tmem_allocator.allocate(") < source.index("tmem_allocator.free(tmem_base)")
    assert ("is_two_cta=True" in source) == is_pair_rung(lowered_example.graph)


def test_waits_and_arrivals_on_tensor_core_barriers_are_fenced_for_tcgen05(lowered_example):
    """One fence per wait (after it) and per arrival (before it), plus the pair around the TMEM set-up and release."""
    def on_tensor_core_barrier(kind):
        return [op for op in ops(lowered_example.graph, kind)
                if op.operands[0].type.barrier.orders_tensor_core]

    assert on_tensor_core_barrier("barrier_wait")
    source = lowered_example.source
    assert source.count("tcgen05_fence.after_thread_sync()") == len(on_tensor_core_barrier("barrier_wait")) + 2
    assert source.count("tcgen05_fence.before_thread_sync()") == len(on_tensor_core_barrier("barrier_arrive")) + 2


def test_in_a_pair_only_the_leader_expects_the_bytes_of_both_halves(lowered_example):
    copies = [op for op in ops(lowered_example.graph, "copy_gmem_to_smem") if op.attrs["partitioned_axis"] is not None]
    if not copies:
        pytest.skip("not a 2-CTA rung")
    for op in copies:
        dst = op.operands[1]
        both_halves = 2 * dst.type.nbytes
        assert re.search(rf"if cluster == 0:.*\n.*elect_one.*\n.*mbarrier_arrive_and_expect_tx\(.*, {both_halves}\)",
                         lowered_example.source)


# ----------------------------------------------------------------------------- what the back end refuses

def lowering_error(kernel, *specs_, arch="sm_100a"):
    """The message of the KernelError verifying `kernel` for `arch` raises (when it is traced, before it runs)."""
    with pytest.raises(tg.KernelError) as info:
        kernel.lower(*specs_, arch=arch)
    return str(info.value)


def test_hopper_wgmma_kernels_are_refused_on_sm100a():
    msg = lowering_error(kernels.tma_wgmma(), *kernels.two_row_specs())
    assert re.search(r"kernels\.py:\d+: \w+ cannot run on sm_100a: ", msg) and "tcgen05_mma" in msg


def test_blackwell_kernels_are_refused_on_sm90a():
    m, n, k = verify_shape(BLACKWELL[0])
    msg = lowering_error(example(BLACKWELL[0]).build(m, n, k), *specs(m, n, k), arch="sm_90a")
    assert "TMEM" in msg and "sm_100a" in msg and f"{BLACKWELL[0]}.py:" in msg


def test_tmem_views_of_some_lanes_are_refused_naming_the_line():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=dict(acc=tg.TMEM((128, 64), tg.float32), out=tg.SMEM((64, 64), tg.float16)))
    def half_lanes(a, c, acc, out):
        part = tg.async_load_tmem(acc.at[tg.ds(0, 64), :])  # @half_lanes
        tg.wait_load_tmem()
        out[...] = part.astype(tg.float16)
        tg.commit_smem()
        tg.copy_smem_to_gmem(out, c)
        tg.wait_smem_to_gmem(0)

    msg = lowering_error(half_lanes, tg.ShapeDtype((64, 64), tg.float16))
    assert "test_sm100.py" in msg and "64 of the 128 lanes" in msg and "acc_tmem.at[:, tg.ds(c, n)]" in msg


def test_a_pair_that_is_not_the_first_cluster_axis_is_refused():
    @tg.kernel(out_shape=tg.ShapeDtype((256, 64), tg.float16), grid=(1,), grid_names=("g",), cluster=(2, 2),
               cluster_names=("x", "pair"),
               scratch_shapes=dict(buf=tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                                   loaded=tg.Barrier(num_arrivals=1)))
    def second_axis_pair(a, c, buf, loaded):
        tg.copy_gmem_to_smem(a.at[tg.ds(0, 128), :], buf, loaded.at[0], collective_axes="pair", partitioned_axis=0)
        tg.barrier_wait(loaded.at[0])

    msg = lowering_error(second_axis_pair, tg.ShapeDtype((256, 64), tg.float16))
    assert "test_sm100.py" in msg and "'pair'" in msg and "first cluster axis" in msg


# ----------------------------------------------------------------------------- TMEM placement

def tmem_buffer(columns, column=0):
    return tmem.TmemBuffer("t", RefType((128, columns), dtypes.float32, MemorySpace.TMEM), column, None)


@pytest.mark.parametrize("widths, allocated", [((128,), 128), ((128, 64), 256), ((16,), 32), ((512,), 512)])
def test_a_block_allocates_its_tmem_refs_side_by_side_in_a_power_of_two_of_columns(widths, allocated):
    assert tmem.allocation_columns([tmem_buffer(w) for w in widths]) == allocated
