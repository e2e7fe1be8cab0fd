"""The flagship kernel's options: its two consumer schedules, 2-block clusters multicasting B (along M) or A (along
N), a wider epilogue, A and B stored either way round (a_layout, b_layout), and loads asking L2 to promote misses."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import hopper_matmul
from tilegemm.showcase import gpu_present, random_inputs, relative_error, stored_operands

TRANSPOSED = [("mk", "nk"), ("km", "kn"), ("km", "nk")]   # besides the default ("mk", "kn")
LAYOUT_IDS = ["a_{}-b_{}".format(*layouts) for layouts in TRANSPOSED]


@pytest.mark.parametrize("schedule,tile_n", [("cooperative", 128), ("cooperative", 192), ("cooperative", 256),
                                             ("pingpong", 128), ("pingpong", 192)])
@pytest.mark.parametrize("seed", [0, 1])
def test_both_schedules_match_numpy_with_several_tiles_per_consumer(schedule, tile_n, seed):
    # 392 x 1000 on 2 blocks: ragged tiles, and each consumer of a block gets several (ping-pong: alternately).
    # With 3 epilogue slices per tile (128x192, cooperative) a buffer is reused across tiles: the interpreter
    # raised a RaceError there until the first slice of a tile waited for every earlier store.
    a, b = random_inputs(392, 1000, 200, tg.bfloat16, seed=seed)
    kernel = hopper_matmul.build(392, 1000, 200, dtype=tg.bfloat16, tile_n=tile_n, schedule=schedule, num_sms=2)
    assert relative_error(kernel(a, b, interpret=True, seed=seed), a, b) < 1e-2


@pytest.mark.parametrize("options,message", [
    (dict(schedule="stream-k"), "schedule must be one of"),
    (dict(tile_n=192, epi_tile_n=256), "wider than tile_n=192"),
    # a ping-pong consumer holds two 64 x tile_n f32 accumulators: 256 registers per thread at tile_n=256
    (dict(tile_n=256, schedule="pingpong"), "needs 256 registers per thread .* or schedule='cooperative'"),
    (dict(b_layout="nt"), r"b_layout one of \('kn', 'nk'\)"),
    (dict(cluster_m=2, cluster_n=2), "along M .* or along N .*, not both"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        hopper_matmul.build(512, 512, 128, **options)


@pytest.mark.parametrize("shape", [(520, 600, 200), (256, 512, 128)], ids=["odd-m-tiles", "even-m-tiles"])
def test_a_cluster_of_two_blocks_sharing_b_matches_numpy(shape):
    # 520 rows are 5 tiles: the second block of the last cluster lies wholly past M and must write nothing
    a, b = random_inputs(*shape, tg.float16)
    c = hopper_matmul.build(*shape, cluster_m=2, num_sms=4)(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_the_cluster_option_lowers_to_multicast_copies_and_a_cluster_launch():
    m = n = k = 1024
    lowered = hopper_matmul.build(m, n, k, cluster_m=2).lower(tg.ShapeDtype((m, k), tg.float16),
                                                              tg.ShapeDtype((k, n), tg.float16), arch="sm_90a")
    assert "multicast" in lowered.features and lowered.generated.launch.cluster == (2, 1, 1)


@pytest.mark.parametrize("shape,options", [((520, 600, 200), dict(tile_n=128)),
                                           ((300, 1000, 200), dict(tile_n=192, swap_ab=True, b_layout="nk"))],
                         ids=["odd-n-tiles", "swapped"])
def test_a_cluster_of_two_blocks_sharing_a_matches_numpy(shape, options):
    # 600 columns are 5 tiles of 128: the second block of the last cluster lies wholly past N and must write nothing;
    # swapped, the blocks of a cluster share the MMA's A, which is b
    a, b = random_inputs(*shape, tg.float16)
    layouts = ("mk", options.get("b_layout", "kn"))
    kernel = hopper_matmul.build(*shape, cluster_n=2, num_sms=4, schedule="cooperative", **options)
    assert relative_error(kernel(*stored_operands(a, b, *layouts), interpret=True), a, b) < 1e-2
    lowered = kernel.lower(*operand_specs(*shape, tg.float16, *layouts), arch="sm_90a")
    assert "multicast" in lowered.features and lowered.generated.launch.cluster == (2, 1, 1)
    copies = [op for op in kernel.trace(*operand_specs(*shape, tg.float16, *layouts)).walk()
              if op.kind == "copy_gmem_to_smem"]
    assert [op.attrs["collective_axes"] for op in copies] == [("cn",), ()]   # A's tile multicast, B's not


def test_a_swapped_tile_ends_in_a_narrower_store_slice_where_the_slices_do_not_divide_it():
    assert hopper_matmul.store_slices(152, 32) == [(0, 32), (32, 32), (64, 32), (96, 32), (128, 24)]
    assert hopper_matmul.store_slices(160, 32) == [(0, 32), (32, 32), (64, 32), (96, 32), (128, 32)]


@pytest.mark.parametrize("accumulators,tile_n,epi_tile_n", [(1, 160, 64), (2, 160, 64), (2, 192, 32), (2, 152, 32),
                                                              (2, 128, 64)])
@pytest.mark.parametrize("by_column", [False, True])
def test_a_tiles_stores_cover_each_slice_once_and_never_write_one_buffer_twice_in_a_row(accumulators, tile_n,
                                                                                     epi_tile_n, by_column):
    slices = hopper_matmul.store_slices(tile_n, epi_tile_n)
    stores = hopper_matmul.store_order(accumulators, slices, epi_tile_n, by_column)
    order = [(i, j) for i, j, _ in stores]
    assert sorted(order) == [(i, j) for i in range(accumulators) for j in range(len(slices))]
    buffers = [b for _, _, b in stores]
    assert all(here != before for before, here in zip(buffers, buffers[1:]))
    assert all((b is None) == (slices[j][1] != epi_tile_n) for _, j, b in stores)   # narrow slices, their buffer
    full = [(i, j) for i, j in order if slices[j][1] == epi_tile_n]
    if by_column:   # the accumulators of a full column slice one after the other, the slices in order
        assert full == [(i, j) for j in range(len(slices)) if slices[j][1] == epi_tile_n for i in range(accumulators)]
    else:
        assert order == [(i, j) for i in range(accumulators) for j in range(len(slices))]


@pytest.mark.parametrize("m,tile_n,epi_tile_n,b_layout", [(300, 152, 32, "kn"), (280, 136, 64, "nk")],
                         ids=["152-in-32s-last-24-past-m", "136-in-64s-last-8"])
def test_a_swapped_tile_with_a_narrower_last_store_slice_matches_numpy(m, tile_n, epi_tile_n, b_layout):
    # 300 rows of C in 152-wide swapped tiles: the second tile's last slice (rows 280-303) runs past M
    a, b = random_inputs(m, 264, 136, tg.float16, seed=3)
    kernel = hopper_matmul.build(m, 264, 136, tile_m=256, tile_n=tile_n, epi_tile_n=epi_tile_n, stages=2,
                                 schedule="cooperative", swap_ab=True, b_layout=b_layout, num_sms=3)
    graph = kernel.trace(*operand_specs(m, 264, 136, tg.float16, "mk", b_layout))
    boxes = {op.operands[0].shape for op in graph.walk() if op.kind == "copy_smem_to_gmem"}
    assert boxes == {(epi_tile_n, 64), (tile_n % epi_tile_n, 64)}   # rows of C x columns of C
    c = kernel(*stored_operands(a, b, "mk", b_layout), interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_a_128_wide_epilogue_with_3_stages_matches_numpy():
    a, b = random_inputs(264, 520, 200, tg.float16)
    c = hopper_matmul.build(264, 520, 200, tile_n=256, stages=3, epi_tile_n=128, num_sms=3,
                                schedule="cooperative")(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


@pytest.mark.parametrize("schedule,tile_n,dtype", [("cooperative", 128, tg.float16), ("pingpong", 192, tg.bfloat16),
                                                   ("cooperative", 256, tg.bfloat16), ("pingpong", 128, tg.float16)],
                         ids=["cooperative-128-f16", "pingpong-192-bf16", "cooperative-256-bf16", "pingpong-128-f16"])
@pytest.mark.parametrize("layouts", TRANSPOSED, ids=LAYOUT_IDS)
def test_operands_stored_either_way_round_match_numpy_with_both_schedules(layouts, schedule, tile_n, dtype):
    # ragged tiles, several per consumer, as in the first test; a and b are passed as the layouts store them
    a, b = random_inputs(392, 1000, 200, dtype, seed=2)
    kernel = hopper_matmul.build(392, 1000, 200, dtype=dtype, tile_n=tile_n, schedule=schedule, num_sms=2,
                                 a_layout=layouts[0], b_layout=layouts[1])
    assert relative_error(kernel(*stored_operands(a, b, *layouts), interpret=True, seed=2), a, b) < 1e-2


def lowered_after_interpreting(shape, layouts, **options):
    """The flagship built with `options` for f16 operands stored in `layouts`, checked against numpy in the
    interpreter, then lowered for sm_90a."""
    a, b = random_inputs(*shape, tg.float16)
    kernel = hopper_matmul.build(*shape, a_layout=layouts[0], b_layout=layouts[1], **options)
    assert relative_error(kernel(*stored_operands(a, b, *layouts), interpret=True), a, b) < 1e-2
    return kernel.lower(*operand_specs(*shape, tg.float16, *layouts), arch="sm_90a")


@pytest.mark.parametrize("layouts", TRANSPOSED, ids=LAYOUT_IDS)
def test_a_cluster_multicasts_b_in_every_layout(layouts):
    lowered = lowered_after_interpreting((520, 600, 200), layouts, cluster_m=2, num_sms=4)
    assert "multicast" in lowered.features and lowered.generated.launch.cluster == (2, 1, 1)


def test_the_kernel_takes_its_inputs_as_stored():
    graph = hopper_matmul.build(512, 256, 128, a_layout="km", b_layout="nk").trace(
        *operand_specs(512, 256, 128, tg.float16, "km", "nk"))
    assert [p.shape for p in graph.inputs] == [(128, 512), (256, 128)] and graph.outputs[0].shape == (512, 256)
    smem = {op.attrs["name"]: op.result.shape for op in graph.walk() if op.kind == "alloc"}
    assert smem["a_smem"] == (4, 64, 128) and smem["b_smem"] == (4, 192, 64)   # tiles as stored: K rows of M, ...
    mma_b = next(op for op in graph.walk() if op.kind == "wgmma").operands[2]
    assert mma_b.producer.kind == "transpose_ref" and mma_b.shape == (64, 192)    # ... read through transposes


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("shape,schedule,tile_n", [((1000, 1016, 520), "pingpong", 192),
                                                   ((1000, 1016, 520), "cooperative", 256),
                                                   ((256, 384, 128), "cooperative", 128)])
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
@pytest.mark.parametrize("layouts", [("mk", "kn")] + TRANSPOSED, ids=["a_mk-b_kn"] + LAYOUT_IDS)
def test_on_the_gpu_every_operand_layout_matches_numpy(monkeypatch, layouts, dtype, shape, schedule, tile_n):
    monkeypatch.setenv("TILEGEMM_POISON", "1")     # outputs start as NaN: an element the kernel misses shows
    a, b = random_inputs(*shape, dtype, seed=4)
    kernel = hopper_matmul.build(*shape, dtype=dtype, tile_n=tile_n, schedule=schedule, num_sms=4,
                                 a_layout=layouts[0], b_layout=layouts[1])
    out = kernel(*stored_operands(a, b, *layouts))
    assert not np.isnan(out.astype(np.float32)).any()
    assert relative_error(out, a, b) < 1e-2


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_present(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("schedule,tile_n", [("cooperative", 192), ("pingpong", 192), ("cooperative", 256)])
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16])
def test_on_the_gpu_each_schedule_matches_numpy_with_many_tiles_per_consumer(schedule, tile_n, dtype):
    # 1000 x 1016 on 4 blocks: ~11 ragged tiles per block, so ping-pong consumers take many turns, the stage
    # ring wraps across tiles with explicit parities, and epilogue buffers are reused from tile to tile.
    a, b = random_inputs(1000, 1016, 520, dtype, seed=3)
    kernel = hopper_matmul.build(1000, 1016, 520, dtype=dtype, tile_n=tile_n, schedule=schedule, num_sms=4)
    assert relative_error(kernel(a, b), a, b) < 1e-2


@pytest.mark.parametrize("layouts", [("mk", "kn"), ("km", "nk")], ids=["a_mk-b_kn", "a_km-b_nk"])
def test_loads_asking_l2_for_256_bytes_a_miss_go_through_their_own_descriptors(layouts):
    lowered = lowered_after_interpreting((392, 1000, 200), layouts, num_sms=2, l2_promotion=256)
    assert "l2_promotion" in lowered.features and lowered.source.count("tgtma.promoted_descriptor(") == 2


def test_pairs_along_n_multicast_a_through_its_promoted_descriptor():
    lowered = lowered_after_interpreting((392, 1000, 200), ("mk", "kn"), cluster_n=2, num_sms=4, l2_promotion=256)
    assert {"multicast", "l2_promotion"} <= set(lowered.features)
    assert lowered.source.count("tgtma.promoted_descriptor(") == 2 and "mcast_mask=" in lowered.source
