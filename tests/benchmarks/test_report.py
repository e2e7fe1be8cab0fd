"""benchmarks/report.py: the markdown table of a run ends with each contender's geometric mean vs cuBLAS."""

import pytest

report = pytest.importorskip("report")

META = dict(date="2026-11-29T13:00:00", device="H200", torch="2.x", cuda="13.0", timing="graph replay",
            inputs="iid normal")


def row(shape, contender, vs_cublas, dtype="float16"):
    m, n, k = shape
    return dict(m=m, n=n, k=k, dtype=dtype, contender=contender, ms=1.0, tflops=1.0, vs_cublas=vs_cublas,
                rel_error=1e-4, job=0)


def test_geometric_means_cover_contenders_run_on_several_shapes():
    rows = [row((1, 1, 1), "cuBLAS", 1.0), row((1, 1, 1), "k", 2.0), row((2, 2, 2), "k", 0.5),
            row((2, 2, 2), "once", 1.3), row((1, 1, 1), "k", 1.21, dtype="bfloat16"),
            row((2, 2, 2), "k", 1.0, dtype="bfloat16")]
    means = report.geometric_means(rows)
    assert set(means) == {("k", "float16"), ("k", "bfloat16")}          # cuBLAS and one-shape contenders: none
    assert means[("k", "float16")] == pytest.approx((1.0, 2)) and means[("k", "bfloat16")] == pytest.approx((1.1, 2))
    twice = rows + [dict(row((2, 2, 2), "k", 0.6), job=1)]               # k f16 timed twice on 2x2x2: no mean
    assert ("k", "float16") not in report.geometric_means(twice)
    table = report.markdown(META, rows)
    assert "| k | bfloat16 | 2 | 1.100x |" in table and "| once |" not in table.split("Geometric mean")[1]
