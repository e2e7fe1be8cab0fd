"""Memory traffic of a tiled GEMM: the order tiles run in, and what L2 saves of the DRAM reads.

The L2 model works at panel granularity: an A panel is the tile_m x K strip
one row of tiles reads, a B panel the K x tile_n strip of one column. Tiles
running at the same time (one wave) read each panel they share once; a panel
read by an earlier wave is still in L2 if the panels read since then fit in
it (least-recently-used replacement). The model follows the first
SIMULATED_WAVES waves; a longer launch repeats the per-wave traffic of the
last half of them, so the work stays bounded however large the problem.
"""
from collections import OrderedDict

import numpy as np

SIMULATED_WAVES = 256


def cdiv(a, b):
    return -(-a // b)


def snake_order(rows, cols, minor_dim, tile_width, count=None):
    """(row, col) index arrays of a rows x cols grid in `tg.planar_snake` order, one entry per linear index
    (the first `count` of them if given)."""
    lin = np.arange(rows * cols if count is None else min(count, rows * cols))
    shape = (rows, cols)
    minor_size, major_size = shape[minor_dim], shape[1 - minor_dim]
    band_tiles = tile_width * major_size
    band = lin // band_tiles
    full_bands = minor_size // tile_width
    last_width = minor_size - full_bands * tile_width
    in_band = lin - band * band_tiles
    width = np.where(band < full_bands, tile_width, max(last_width, 1)) if last_width else tile_width
    minor = band * tile_width + in_band % width
    major_fwd = in_band // width
    major = np.where(band % 2 == 0, major_fwd, major_size - 1 - major_fwd)
    return (minor, major) if minor_dim == 0 else (major, minor)


def tile_order(tiles_m, tiles_n, cluster, raster, count=None):
    """(m, n) tile index arrays in the order blocks start them: clusters in `raster` order, then the
    blocks of each cluster; `raster` None is launch order with m fastest. `count`: only the first tiles."""
    cm, cn = cluster
    rows, cols = cdiv(tiles_m, cm), cdiv(tiles_n, cn)
    minor_dim, width = (0, rows) if raster is None else (raster.minor_dim, raster.tile_width)
    cluster_m, cluster_n = snake_order(rows, cols, minor_dim, width, count)  # each cluster holds >= 1 tile
    within_m, within_n = np.divmod(np.arange(cm * cn), cn)
    m = (cluster_m[:, None] * cm + within_m[None, :]).ravel()
    n = (cluster_n[:, None] * cn + within_n[None, :]).ravel()
    inside = (m < tiles_m) & (n < tiles_n)
    return m[inside][:count], n[inside][:count]


def dram_operand_bytes(tiles_m, tiles_n, cluster, raster, concurrent, a_panel_bytes, b_panel_bytes, l2_bytes,
                       max_waves=SIMULATED_WAVES):
    """Bytes of A and B read from DRAM when `concurrent` tiles run at once, in `tile_order`, and L2 keeps
    the most recently used panels up to `l2_bytes`. Waves beyond `max_waves` (None: no limit) are counted
    at the mean traffic of the last half of the simulated ones."""
    count = None if max_waves is None else max_waves * concurrent
    order_m, order_n = tile_order(tiles_m, tiles_n, cluster, raster, count)
    per_wave = _wave_bytes(order_m, order_n, concurrent, a_panel_bytes, b_panel_bytes, l2_bytes)
    remaining_waves = (tiles_m * tiles_n - len(order_m)) / concurrent
    steady = per_wave[len(per_wave) // 2:]
    return sum(per_wave) + (round(remaining_waves * sum(steady) / len(steady)) if remaining_waves else 0)


def _wave_bytes(order_m, order_n, concurrent, a_panel_bytes, b_panel_bytes, l2_bytes):
    """DRAM bytes of each wave of `concurrent` tiles of the order, through an LRU L2 of `l2_bytes`."""
    resident = OrderedDict()
    held = 0
    per_wave = []
    for start in range(0, len(order_m), concurrent):
        wave = [("a", int(i), a_panel_bytes) for i in np.unique(order_m[start:start + concurrent])]
        wave += [("b", int(j), b_panel_bytes) for j in np.unique(order_n[start:start + concurrent])]
        total = 0
        for kind, index, size in wave:
            key = (kind, index)
            if key in resident:
                resident.move_to_end(key)
                continue
            total += size
            resident[key] = size
            held += size
        while held > l2_bytes and resident:
            held -= resident.popitem(last=False)[1]
        per_wave.append(total)
    return per_wave
