"""benchmarks/decode_grid.py: the issue-12 grids, the bandwidth fraction and the standing figures of a run's rows."""
import math

import pytest

import decode_grid  # noqa: E402
import standing  # noqa: E402


def row(suite, m, vs_cublas, contender="tg.matmul", **extra):
    return dict(suite=suite, contender=contender, m=m, n=4096, k=4096, dtype="float16", vs_cublas=vs_cublas, **extra)


def test_the_decode_grid_is_every_m_against_every_weight():
    shapes = decode_grid.decode_shapes()
    assert len(shapes) == len(decode_grid.DECODE_M) * len(decode_grid.DECODE_NK) == len(set(shapes))
    assert (1, 8192, 8192) in shapes and (128, 4096, 14336) in shapes


def test_the_ragged_shapes_are_multiples_of_no_tile():
    assert all(d % 64 for shape in decode_grid.RAGGED for d in shape)


def test_shapes_parse_and_a_bad_one_is_named():
    assert decode_grid.parse_shapes("3000x5000x2000, 1X8X8") == [(3000, 5000, 2000), (1, 8, 8)]
    with pytest.raises(ValueError, match="'3000x5000'"):
        decode_grid.parse_shapes("3000x5000")


def test_the_bandwidth_fraction_compares_bytes_per_second_with_a_copys():
    # a problem moving as many bytes as the copy, in twice its time, runs at half its bandwidth
    moved = decode_grid.bytes_moved(16, 4096, 4096, "bfloat16")
    assert moved == (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2
    assert decode_grid.bandwidth_fraction(16, 4096, 4096, "bfloat16", 2.0, moved, 1.0) == pytest.approx(0.5)


def test_the_summary_takes_minima_over_its_suites_and_the_suites_geometric_mean():
    rows = [row("decode", 1, 1.1, bw_fraction=0.9), row("decode", 64, 0.95, bw_fraction=0.8),
            row("decode", 128, 0.9, bw_fraction=0.5), row("decode", 1, 1.0, contender="cuBLAS", bw_fraction=0.1),
            row("shapes", 3000, 1.02), row("shapes", 777, 0.97), row("suite", 2048, 1.0), row("suite", 8192, 1.21)]
    figures = decode_grid.summary(rows)
    assert figures["decode_ratio_min"] == 0.9
    assert figures["decode_bw_fraction_min"] == 0.8          # M = 128 is not memory-bound; cuBLAS is not ours
    assert figures["ragged_ratio_min"] == 0.97
    assert figures["suite_geomean"] == pytest.approx(math.sqrt(1.21))


def test_a_run_without_a_suite_leaves_its_figures_out_and_standing_reads_the_summary():
    assert decode_grid.summary([row("shapes", 3000, 1.02)]) == {"ragged_ratio_min": 1.02}
    assert standing.from_bench({"meta": {"summary": {"ragged_ratio_min": 1.02}}}) == {"ragged_ratio_min": 1.02}
