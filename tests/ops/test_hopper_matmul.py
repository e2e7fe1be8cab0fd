"""The flagship kernel's options: its two consumer schedules, a 2-block cluster multicasting B, a wider epilogue."""
import pytest

import tilegemm as tg
from tilegemm.ops import hopper_matmul
from tilegemm.showcase import gpu_present, random_inputs, relative_error


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
    (dict(tile_n=192, epi_tile_n=128), "must divide tile_n=192"),
    # a ping-pong consumer holds two 64 x tile_n f32 accumulators: 256 registers per thread at tile_n=256
    (dict(tile_n=256, schedule="pingpong"), "needs 256 registers per thread .* or schedule='cooperative'"),
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


def test_a_128_wide_epilogue_with_3_stages_matches_numpy():
    a, b = random_inputs(264, 520, 200, tg.float16)
    c = hopper_matmul.build(264, 520, 200, tile_n=256, stages=3, epi_tile_n=128, num_sms=3,
                                schedule="cooperative")(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


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
