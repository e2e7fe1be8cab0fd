"""Memory traffic of a tiled GEMM: the order tiles run in, and what L2 saves of the DRAM reads.

The L2 model works at panel granularity: an A panel is the tile_m x K strip
one row of tiles reads, a B panel the K x tile_n strip of one column. Tiles
running at the same time (one wave) read each panel they share once; a panel
read by an earlier wave is still in L2 if the panels read since then fit in
it (least-recently-used replacement).
"""
from collections import OrderedDict

import numpy as np


def cdiv(a, b):
    return -(-a // b)


def snake_order(rows, cols, minor_dim, tile_width):
    """(row, col) index arrays of a rows x cols grid in `tg.planar_snake` order, one entry per linear index."""
    lin = np.arange(rows * cols)
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


def tile_order(tiles_m, tiles_n, cluster, raster):
    """(m, n) tile index arrays in the order blocks start them: clusters in `raster` order, then the
    blocks of each cluster; `raster` None is launch order with m fastest."""
    cm, cn = cluster
    rows, cols = cdiv(tiles_m, cm), cdiv(tiles_n, cn)
    if raster is None:
        cluster_m, cluster_n = snake_order(rows, cols, 0, rows)
    else:
        cluster_m, cluster_n = snake_order(rows, cols, raster.minor_dim, raster.tile_width)
    within_m, within_n = np.divmod(np.arange(cm * cn), cn)
    m = (cluster_m[:, None] * cm + within_m[None, :]).ravel()
    n = (cluster_n[:, None] * cn + within_n[None, :]).ravel()
    inside = (m < tiles_m) & (n < tiles_n)
    return m[inside], n[inside]


def dram_operand_bytes(order_m, order_n, concurrent, a_panel_bytes, b_panel_bytes, l2_bytes):
    """Bytes of A and B read from DRAM when `concurrent` tiles run at once, in the given order, and L2
    keeps the most recently used panels up to `l2_bytes`."""
    resident = OrderedDict()
    held = 0
    total = 0
    for start in range(0, len(order_m), concurrent):
        wave = [("a", int(i), a_panel_bytes) for i in np.unique(order_m[start:start + concurrent])]
        wave += [("b", int(j), b_panel_bytes) for j in np.unique(order_n[start:start + concurrent])]
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
    return total
