"""benchmarks/design_contenders.py and report.py: --all-designs times the fastest design of each family beside
tg.matmul's pick, and sets the model's predicted time beside each measured one (stand-in timings)."""
from types import SimpleNamespace

import pytest

import design_contenders  # noqa: E402
import report  # noqa: E402

SWAP = dict(swap_ab=True, tile_m=64, tile_n=16, schedule="pingpong", stages=16)
SWAP_SPLIT = dict(SWAP, split_k=2)
SWAP_WIDE = dict(SWAP, tile_m=128, schedule="cooperative", stages=11)
CLASSIC = dict(tile_n=128, schedule="cooperative")
META = dict(date="2026-12-01T07:00:00", device="H200", torch="2.x", cuda="13.0", timing="graph replay",
            inputs="iid normal")


def ranked(*designs_us):
    """designs.predictions' shape: [(params, budget)], fastest first, budgets with predicted_s only."""
    return sorted([(params, SimpleNamespace(predicted_s=us * 1e-6)) for params, us in designs_us],
                  key=lambda item: item[1].predicted_s)


def measured(contender, ms, vs_cublas=1.0):
    return dict(contender=contender, m=16, n=4096, k=14336, dtype="float16", ms=ms, tflops=1.0,
                vs_cublas=vs_cublas, rel_error=1e-4, job=0)


def test_each_family_contributes_its_fastest_design_and_the_pick_carries_its_prediction():
    designs = ranked((SWAP_SPLIT, 34.0), (SWAP, 53.0), (SWAP_WIDE, 55.0), (CLASSIC, 90.0))
    expected = design_contenders.contenders(designs, pick=SWAP_SPLIT)
    assert set(expected) == {"tg.matmul", "design: swap-AB + split-K: 64x16 pingpong, 16 stages, split 2",
                             "design: swap-AB: 64x16 pingpong, 16 stages",
                             "design: classic 128-row: 128x128 cooperative, 4 stages"}   # SWAP_WIDE: not its best
    assert expected["tg.matmul"]["params"] == SWAP_SPLIT
    assert expected["tg.matmul"]["predicted_us"] == pytest.approx(34.0)
    wider = design_contenders.contenders(designs, pick=SWAP_SPLIT, per_family=2)
    assert wider[design_contenders.name(SWAP_WIDE)]["predicted_us"] == pytest.approx(55.0)


def test_a_pick_the_model_did_not_rank_is_refused():
    with pytest.raises(ValueError, match="not among the ranked designs"):
        design_contenders.contenders(ranked((SWAP, 53.0)), pick=CLASSIC)


def test_measured_rows_get_the_predicted_time_and_the_ratio_and_others_stay_as_they_were():
    expected = design_contenders.contenders(ranked((SWAP_SPLIT, 34.0), (SWAP, 50.0)), pick=SWAP_SPLIT)
    rows = design_contenders.annotate([measured("cuBLAS", 0.0323), measured("tg.matmul", 0.0355, 0.91),
                                       measured(design_contenders.name(SWAP), 0.040, 0.81)], expected)
    assert "predicted_us" not in rows[0]
    pick, swap = rows[1], rows[2]
    assert pick["design"] == "swap-AB + split-K: 64x16 pingpong, 16 stages, split 2"
    assert (pick["predicted_us"], pick["measured_us"]) == pytest.approx((34.0, 35.5))
    assert pick["measured_over_predicted"] == pytest.approx(35.5 / 34.0)
    assert swap["measured_over_predicted"] == pytest.approx(40.0 / 50.0)


def test_the_markdown_sets_predicted_beside_measured_only_for_rows_with_a_prediction():
    expected = design_contenders.contenders(ranked((SWAP_SPLIT, 34.0), (SWAP, 50.0)), pick=SWAP_SPLIT)
    rows = design_contenders.annotate([measured("cuBLAS", 0.0323), measured("tg.matmul", 0.0355, 0.91),
                                       measured(design_contenders.name(SWAP), 0.040, 0.81)], expected)
    section = report.markdown(META, rows).split("The model's predicted time")[1]
    assert ("| 16x4096x14336 | float16 | tg.matmul | swap-AB + split-K: 64x16 pingpong, 16 stages, split 2 | "
            "34.0 | 35.5 | 1.044 | 0.910x |") in section
    assert "| design: swap-AB: 64x16 pingpong, 16 stages | swap-AB: 64x16 pingpong, 16 stages | 50.0 | 40.0 | 0.800 |" \
        in section
    assert "| cuBLAS |" not in section
    assert "predicted" not in report.markdown(META, [measured("cuBLAS", 0.0323)])


def test_a_design_given_by_hand_is_parsed_from_name_value_pairs():
    assert design_contenders.parse_design("tile_m=128,tile_n=256,schedule=cooperative,cluster_m=2") == dict(
        tile_m=128, tile_n=256, schedule="cooperative", cluster_m=2)
    assert design_contenders.parse_design("tile_n=16, swap_ab=1, split_k=2, split_reduction=last_slice") == dict(
        tile_n=16, swap_ab=True, split_k=2, split_reduction="last_slice")
    with pytest.raises(ValueError, match=r"schedule \(cooperative or pingpong\).*got 'schedule=coop'"):
        design_contenders.parse_design("tile_n=128,schedule=coop")
    with pytest.raises(ValueError, match="names no tile_n"):
        design_contenders.parse_design("tile_m=128")


def test_fields_replacing_a_picks_need_not_name_a_tile():
    assert design_contenders.parse_fields("cluster_m=2") == dict(cluster_m=2)
    assert design_contenders.parse_fields("stages=4, schedule=pingpong") == dict(stages=4, schedule="pingpong")
    with pytest.raises(ValueError, match="got 'cluster=2'"):
        design_contenders.parse_fields("cluster=2")


def test_designs_given_by_hand_are_timed_beside_the_pick_with_the_models_predictions():
    from tilegemm.ops import designs
    pick = dict(designs.choose(1500, 2504, 1000, "float16", "NVIDIA H200", 132, "mk", "kn"))
    given = design_contenders.given([design_contenders.parse_design("tile_n=128,schedule=cooperative,cluster_m=2")],
                                    1500, 2504, 1000, "float16", "NVIDIA H200", 132, "mk", "kn", pick)
    name = "design: classic 128-row: 128x128 cooperative, 4 stages, clusters of 2"
    assert set(given) == {"tg.matmul", name}
    assert given[name]["params"] == dict(tile_n=128, schedule="cooperative", cluster_m=2, num_sms=132,
                                         a_layout="mk", b_layout="kn")
    assert given["tg.matmul"]["params"] == pick
    assert 10 < given["tg.matmul"]["predicted_us"] < given[name]["predicted_us"] < 30
    with pytest.raises(ValueError, match="refuses design"):
        design_contenders.given([dict(tile_m=64, tile_n=128, schedule="cooperative")], 1500, 2504, 1000, "float16",
                                "NVIDIA H200", 132, "mk", "kn", pick)


def test_designs_by_hand_may_pair_blocks_along_n_and_order_their_tiles_otherwise_each_named_apart():
    from tilegemm.ops import designs
    pick = dict(designs.choose(1500, 2504, 1000, "float16", "NVIDIA H200", 132, "mk", "kn"))
    texts = ["tile_n=256,schedule=cooperative,cluster_n=4", "tile_n=128,schedule=cooperative,grid_tile_width=16",
             "tile_n=128,schedule=cooperative,grid_minor_dim=1"]
    given = design_contenders.given([design_contenders.parse_design(t) for t in texts], 1500, 2504, 1000, "float16",
                                    "NVIDIA H200", 132, "mk", "kn", pick)
    names = ["design: classic 128-row: 128x256 cooperative, 4 stages, clusters of 4 along N",
             "design: classic 128-row: 128x128 cooperative, 4 stages, tiles in snakes 16 wide, m minor",
             "design: classic 128-row: 128x128 cooperative, 4 stages, tiles in snakes 8 wide, n minor"]
    assert set(given) == {"tg.matmul", *names}
    assert given[names[0]]["params"]["num_sms"] == 120   # the 30 clusters of four the H200 holds at once
