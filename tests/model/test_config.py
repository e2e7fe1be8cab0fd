"""GemmConfig: field checks, the accumulator each consumer holds, the one-line description, per-block resources."""
import pytest

from tilegemm.model import GemmConfig, Promotion, Raster, resources
from tilegemm.model.config import fma_thread_tile


@pytest.mark.parametrize("name", ["tile_m", "tile_n", "tile_k", "stages", "consumers", "epilogue_buffers",
                                  "acc_buffers"])
@pytest.mark.parametrize("bad", [0, -1, 64.0])
def test_sizes_and_counts_must_be_positive_ints(name, bad):
    fields = dict(tile_m=128, tile_n=128, tile_k=64)
    with pytest.raises(ValueError, match=rf"^GemmConfig\.{name} must be a positive int, got {bad!r}$"):
        GemmConfig(**{**fields, name: bad})


def test_consumers_split_the_tile_along_m_or_n():
    assert GemmConfig(128, 256, 64, consumers=2).mma_tile == (64, 256)
    assert GemmConfig(128, 256, 64, consumers=2, consumer_split="n").mma_tile == (128, 128)
    split_n = resources(GemmConfig(128, 256, 64, consumers=2, consumer_split="n"))
    assert split_n.acc_registers == 128 * 128 // 128


def test_a_description_names_every_design_choice():
    c = GemmConfig(128, 256, 64, stages=4, release_delay=1, consumers=2, producers=1, cluster=(2, 1), multicast=True,
                   persistent=True, raster=Raster(0, 8), epilogue_tile=(64, 64), epilogue_buffers=2)
    assert c.describe() == ("wgmma 128x256x64, 4 stages released 1 step late, 2 consumer + 1 producer warpgroups, "
                            "cluster 2x1 multicast, persistent, planar_snake minor=m width=8, epilogue 64x64 x2")
    assert GemmConfig(64, 64, 64, stages=1).describe() == ("wgmma 64x64x64, 1 stage, 1 consumer warpgroup, "
                                                           "one block per tile, launch order")


@pytest.mark.parametrize("outputs, tile", [(1, (1, 1)), (2, (2, 1)), (8, (4, 2)), (32, (8, 4)), (64, (8, 8))])
def test_a_simt_thread_holds_its_outputs_as_square_a_tile_as_powers_of_two_allow(outputs, tile):
    assert fma_thread_tile(outputs) == tile


def test_tcgen05_pipelines_count_full_and_empty_barriers_per_stage_and_two_per_accumulator_buffer():
    r = resources(GemmConfig(128, 256, 64, stages=4, instruction="tcgen05", acc_buffers=2))
    assert r.smem_barriers == 8 * (2 * 4 + 2 * 2)
    assert r.tmem_columns == 256 * 2 and r.acc_registers == 0


def test_a_promoting_consumer_holds_its_partials_beside_the_tiles_accumulator():
    promoted = GemmConfig(128, 128, 128, consumers=2, promotion=Promotion(partials=2, drain_steps=2))
    assert resources(promoted).acc_registers == 3 * resources(GemmConfig(128, 128, 128, consumers=2)).acc_registers
    assert "promoted per K step" in promoted.describe()


@pytest.mark.parametrize("promotion, message", [
    (True, r"^GemmConfig\.promotion must be None or a tg\.model\.Promotion\(partials, drain_steps, gmem_scales\), "
           r"got True$"),
    (Promotion, r"^GemmConfig\.promotion must be None or a tg\.model\.Promotion"),
])
def test_promotion_is_described_by_a_promotion(promotion, message):
    with pytest.raises(ValueError, match=message):
        GemmConfig(128, 128, 128, consumers=2, promotion=promotion)


@pytest.mark.parametrize("field", ["partials", "drain_steps"])
def test_a_promotion_counts_positive_ints(field):
    with pytest.raises(ValueError, match=rf"^Promotion\.{field} must be a positive int, got 0$"):
        Promotion(**{field: 0})


def test_where_a_promotion_reads_its_scales_is_a_bool():
    with pytest.raises(ValueError, match=r"^Promotion\.gmem_scales must be a bool, got 'yes'$"):
        Promotion(gmem_scales="yes")
