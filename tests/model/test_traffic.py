"""Tile order and the L2 panel model behind the DRAM traffic row."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.model import Raster
from tilegemm.model.traffic import dram_operand_bytes, snake_order, tile_order


@pytest.mark.parametrize("rows, cols, minor_dim, width", [(6, 5, 0, 2), (6, 5, 1, 2), (7, 4, 0, 3), (3, 9, 1, 4)])
def test_snake_order_is_tg_planar_snake(rows, cols, minor_dim, width):
    m, n = snake_order(rows, cols, minor_dim, width)
    expected = [tg.planar_snake(lin, (rows, cols), minor_dim, width) for lin in range(rows * cols)]
    assert list(zip(m.tolist(), n.tolist())) == expected


def test_every_tile_is_visited_once_in_clusters():
    m, n = tile_order(5, 6, (2, 1), Raster(1, 2))
    assert sorted(zip(m.tolist(), n.tolist())) == [(i, j) for i in range(5) for j in range(6)]
    assert (m[0], n[0]) == (0, 0) and (m[1], n[1]) == (1, 0)   # the two blocks of a cluster start together


def test_launch_order_runs_m_fastest():
    m, n = tile_order(3, 2, (1, 1), None)
    assert list(zip(m.tolist(), n.tolist())) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]


def test_the_first_tiles_of_the_order_are_the_order_cut_short():
    m, n = tile_order(5, 6, (2, 1), Raster(1, 2))
    first_m, first_n = tile_order(5, 6, (2, 1), Raster(1, 2), count=7)
    assert (first_m.tolist(), first_n.tolist()) == (m[:7].tolist(), n[:7].tolist())


def test_a_large_l2_reads_every_panel_once():
    assert dram_operand_bytes(4, 4, (1, 1), None, 3, 10, 100, l2_bytes=10 ** 9) == 4 * 10 + 4 * 100


def test_without_l2_each_wave_reads_its_own_panels():
    # waves of 4 tiles are whole columns: 4 A panels and 1 B panel each
    assert dram_operand_bytes(4, 4, (1, 1), None, 4, 10, 100, l2_bytes=0) == 4 * (4 * 10 + 100)


def test_banded_rasterisation_reuses_panels_that_launch_order_evicts():
    tiles, concurrent, panel = 32, 16, 1
    launch = dram_operand_bytes(tiles, tiles, (1, 1), None, concurrent, panel, panel, l2_bytes=24)
    banded = dram_operand_bytes(tiles, tiles, (1, 1), Raster(1, 4), concurrent, panel, panel, l2_bytes=24)
    assert banded < launch


def test_waves_past_the_simulated_ones_repeat_their_steady_traffic():
    # 200 x 150 tiles in waves of 132: 228 waves, of which 16 are simulated and the rest extrapolated
    exact = dram_operand_bytes(200, 150, (1, 1), None, 132, 10, 100, l2_bytes=2000, max_waves=None)
    bounded = dram_operand_bytes(200, 150, (1, 1), None, 132, 10, 100, l2_bytes=2000, max_waves=16)
    assert bounded == pytest.approx(exact, rel=0.02) and bounded != exact


@pytest.mark.parametrize("rows, cols, minor_dim, width", [(8, 5, 0, 3), (4, 11, 1, 4), (9, 2, 0, 5)])
def test_snake_order_with_a_last_band_narrower_than_the_others_but_wider_than_one_is_tg_planar_snake(
        rows, cols, minor_dim, width):
    m, n = snake_order(rows, cols, minor_dim, width)
    assert list(zip(m.tolist(), n.tolist())) == [tg.planar_snake(lin, (rows, cols), minor_dim, width)
                                                 for lin in range(rows * cols)]


def test_clusters_along_n_visit_every_tile_once_and_start_their_blocks_together():
    m, n = tile_order(3, 5, (1, 2), Raster(1, 3))
    assert sorted(zip(m.tolist(), n.tolist())) == [(i, j) for i in range(3) for j in range(5)]
    assert (m[0], n[0]) == (0, 0) and (m[1], n[1]) == (0, 1)   # the two blocks of a cluster are n neighbours


def test_l2_evicts_the_least_recently_used_panel_not_the_first_read():
    # one A panel (10 B) is reused by every tile while B panels (1 B) stream past an 11 B L2: A stays resident
    # one row of four tiles, one at a time: tile order (0, 0), (0, 1), (0, 2), (0, 3)
    assert dram_operand_bytes(1, 4, (1, 1), None, 1, 10, 1, l2_bytes=11) == 10 + 4 * 1
