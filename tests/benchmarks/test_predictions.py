"""benchmarks/predictions.py: the model's table for the issue-12 shapes, one row per shape, its pick the fastest."""

import decode_grid  # noqa: E402
import predictions  # noqa: E402


def test_every_shape_has_a_row_whose_pick_is_its_fastest_family():
    lines = predictions.rows([(16, 4096, 14336), (3000, 5000, 2000)], ("mk", "nk"))
    assert len(lines) == 2
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        picked, family_times = float(cells[2]), [float(c) for c in cells[5:] if c != "-"]
        assert picked == min(family_times)


def test_the_decode_grid_has_twelve_shapes():
    assert len(decode_grid.decode_shapes()) == 12
