"""The designs tg.matmul chooses among per problem, ranked by the model's predicted time (nothing is compiled).

* classic: 128-row tiles, 128-256 wide, over the whole K (`CLASSIC`, narrowed by `classic_space`);
* filling: swapped 256-row cooperative tiles (C^T's: 256 rows of N on WGMMA's row side, 128 per consumer, the
  tile's width along M) of the widths that waste least of the SMs' rounds on this problem (`filling_designs`),
  e.g. 132 256x152 tiles at 5000 x 1000 x 3000 (one round, every SM busy, where 240 128x192 tiles of C leave 9%
  of two rounds), and the least-waste swapped 128-row tile;
* any 128-row one in clusters of CLUSTER_SIZES blocks sharing the MMA's B tile by TMA multicast, where the model
  bounds it by L2 (`_clustered`): mostly where an operand's rows are not a multiple of 128 bytes, so that they
  start mid-way through L2's lines and cost twice the reads (tilegemm.model.layouts.line_factor);
* 64-row tiles with ping-pong consumers, where 128-row tiles leave SMs idle (M up to `MAX_64_ROW_M`; 224 wide too
  where B is K-major);
* swap-AB for M <= `MAX_SWAP_M` (decode): C^T = B^T A^T, B on WGMMA's 64-row side, M a 16-64 wide tile;
* any of the last two split over K (`split_k`) when its tiles are too few to give every SM one: a memory-bound
  problem then streams B from every SM. The slices' partials are summed in a fixed order by each tile's last
  slice, in the same kernel (`split_reduction="last_slice"`, tg.count_arrival): 0.95 -> 1.03x cuBLAS at
  128x4096x14336 (its ring 8 stages deep, not 6) and 1.00 -> 1.06x at 64x4096x14336 (RESULTS.md run 114);
* a classic design with a stream-K tail (`stream_k`): where its tiles leave the last round partly idle, that
  round's tiles split into K slices over every SM, their partials summed in a fixed order (`stream_k_choices`).

Block-scaled fp8 calls (tilegemm.ops.blockscaling) choose among their own designs, cooperative 128-row tiles
(256-row ones too beyond decode's M) `BLOCK_SCALED_TILE_N` wide (`choose_block_scaled`), each with the deepest
stage ring that fits (a shallow one, beside narrower store slices where they deepen it); where TMA cannot copy the
scales as stored, each reads them from GMEM or pads them first (tilegemm.ops.scale_padding).

The 64-row and swap-AB designs keep the deepest stage ring that fits them (decode is memory-bound: bytes in
flight), over the whole K or split (whose last slices store C in its own dtype: `with_stages`). Designs the model
predicts equal are ranked by fewer rounds of work units, then more units (more SMs streaming). A design is budgeted
from the graph of the flagship it runs, traced in the MMA's frame without split-K (`tilegemm.model.designs` adds the
slices and their reduction).
"""
import functools
from dataclasses import replace

import numpy as np

from ..errors import KernelError
from ..lang import dtypes
from ..lang.arch import TMA_ALIGN, WARPGROUP_THREADS
from ..lang.tensorcore import WGMMA
from ..lang.trace import ShapeDtype
from ..model import config_from_graph, get_device
from ..model.budget import SM_BOUND
from ..model.designs import design_budget, padding_s
from ..model.layouts import operand_specs
from ..runtime import readers
from ..runtime.counters import counters_for
from . import blockscaling, epilogue, hopper_matmul, scale_padding, splitk_reduce

# The classic space: the N tile trades WGMMA width against the tail (at 8192^3, 128x192 tiles fill 99.3% of their
# last round against 97.0% for 128x256, and measured 1-2% faster: RESULTS.md, run 7); the schedule trades a hidden
# epilogue against one warpgroup issuing alone (ping-pong measured 0.1-1.8% faster at 128x192, run 10, and 3-4%
# slower at 128x128, run 11); the model sees both. Stages are the flagship's 4, or CLASSIC_RING where a tile wider
# than 128 has room for them (`_classic_ring`), and the snake width its 8: the model predicts 3, 4 and 5 stages
# alike and ranks snake widths within its error, while on the H200 widths 4 and 16 measured 1-3% slower than 8
# (runs 2 and 3).
CLASSIC = {"tile_n": [128, 192, 256], "schedule": list(hopper_matmul.SCHEDULES)}
CLASSIC_K_MAJOR_TILE_N = (160,)    # ... and where B is K-major (a weight stored [N, K], every fp8 B): fp8 128x160
# ping-pong tiles in five stages ran 4096x7168x16384 at 1.051x cuBLAS where the 128x256 pick ran 1.021x (45 tiles
# across N to 28, 11 rounds to 7: the last round's idle SMs; RESULTS.md run 146; 1.059x against 1.033x in one
# process, run 149; at 4096x8192x4096, 0.6-1.4% slower, run 149). Where B is N-major its 64-column
# TMA boxes made such widths 1.3-1.7x slower (run 43).
ROWS_64_TILE_N = (128, 192, 256)   # N tiles of the 64-row design (a 64x256 ping-pong tile is 128 registers)
# ... and where B is K-major (a weight stored [N, K]): 224 makes 128 tiles of a 14336-wide weight at M = 128, which
# measured 1.03x cuBLAS against 0.92-0.97x for the 112 tiles of 128 or 256 (RESULTS.md run 52). Widths that are not
# a multiple of 64 are left out where B is N-major: its 64-column TMA boxes made such tiles 1.3-1.7x slower (run 43).
ROWS_64_K_MAJOR_TILE_N = (224,)
SWAP_TILE_N = (16, 32, 64)         # M tiles of swap-AB; 8 wide, the PTX check (lower.facts) finds a wrong descriptor
MAX_SWAP_M = SWAP_TILE_N[-1]
# Filling designs: 256-row cooperative swapped tiles measured 0.847x and 0.988x cuBLAS at 5000x1000x3000 and
# 3000x5000x2000 where swapped 128-row ones measured 0.671x and 0.970x (RESULTS.md runs 43 and 45; at 777x3000x1400
# both lost to 128x192 tiles of C). Widths: at least 128 (swapped widths 80-112 measured 0.48-0.87x of the classic
# tiles, run 43: a narrow WGMMA re-reads its A tile from SMEM per FLOP more often, which the model does not see; with
# wide store slices and stmatrix, 256x120 still ran no faster than 256x128 at 1500 x 2504 x 1000, run 141), at
# most what a consumer's 128 rows keep in registers, in WGMMA's steps of 8 (132 256x152 tiles at 5000 x 1000 x 3000,
# one per SM as cuBLAS's, measured 0.4-2% faster than 128 256x160 ones, run 138). Tiles of C at widths outside
# CLASSIC measured 1.3-1.7x slower than 128x192 (run 43): not candidates.
FILL_TILE_M = 256
STORE_SLICES = (64, 32, 16, 8)     # epilogue store slice widths, widest first: each slice is a round of SMEM
                                   # writes, a barrier and a TMA store, and none hides behind a main loop where
                                   # every SM has one tile (RESULTS.md run 140)
CLASSIC_RING = 5   # stages of a 128-row tile of C wider than 128 where they fit with store slices of at least
DEEP_RING_SLICE = 32   # columns: 128x192 ping-pong tiles ran 0.7-1.5% faster with five stages in 32-column slices
                       # than with four in 64-column ones (f16, bf16, fp8 at 8192^3; f16, bf16 at 8192x28672x4096), four
                       # in 32-column slices as fast as in 64 (RESULTS.md run 146); 8-column slices cost 6% (run 140).
                       # 128x128 tiles keep four: with five they ran 2048^3 3-5% slower (run 148; in clusters of four at
                       # 1500x2504x1000, 1-3% faster)


def swapped_widths(tile_m):
    """The widths of swapped cooperative tile_m-row tiles: from 128, in WGMMA's N steps (8), up to what a
    consumer's rows keep in registers and one WGMMA covers."""
    in_registers = hopper_matmul.MAX_ACC_REGISTERS * WARPGROUP_THREADS // (tile_m // hopper_matmul.CONSUMERS)
    widest = min(WGMMA.max_n, in_registers)
    return tuple(range(128, widest + 1, WGMMA.n_step()))


FILL_TILE_N = swapped_widths(FILL_TILE_M)
SWAPPED_TILE_M = 128   # the least-waste swapped 128-row tile is a candidate too: 128x160 of them in clusters of
                       # four ran 777x3000x1400 at 0.95x cuBLAS where 128x192 tiles of C ran 0.74x (RESULTS.md run 60)
CLUSTER_SIZES = (4, 2) # blocks sharing a tile by TMA multicast, tried where L2 bounds a design; of equal predictions
                       # the larger first (swapped 128x160 tiles: 1.26x their plain twin in fours, 1.16x in twos, run 60)
CLUSTER_MARGIN = 0.05  # a cluster design must be predicted this much faster than its plain twin: where the model
                       # predicts them equal, clusters of four measured up to 5% slower (RESULTS.md run 64)
CLUSTER_TIE = 0.01     # cluster sizes predicted this close count as equal (the model's grid and latency terms move
                       # them apart by less)
FILL_WIDTHS = 2     # the widths wasting least that are budgeted (each design costs a trace, ~0.1 s)
FILL_MARGIN = 0.03  # a filling design must be predicted this much faster than the classic space's best (estimate:
                    # the model's spread between designs it ranks alike)
MAX_64_ROW_M = 256                 # beyond, 64-row tiles re-read B twice as often for little gain (estimate)
MAX_SPLIT_K = 16
MAX_SPLIT_UNITS = 4                # split only as far as units of work <= this many per SM
MAX_STREAM_K = 8                   # K slices of a stream-K tail tile, at most
STREAM_K_MARGIN = 0.03             # a stream-K tail must be predicted this much faster than the best other design:
                                   # after ten or more rounds the model sees a tail's gain the H200 did not
                                   # (4096x8192x4096, 6144^3: +2.4% and +0.4% predicted, -1.1% and -2.2% measured,
                                   # RESULTS.md run 75; blocks reach their tail slices at different times, run 74)
BLOCK_SCALED_TILE_N = (64, 128)    # N tiles within one of B's 128-row scale blocks
BLOCK_SCALED_STAGES = 8            # more stages than this keep no more loads in flight a compute-bound tile needs
BLOCK_SCALED_MIN_STAGES = 4        # fewer starve a compute-bound block-scaled tile: 128x128 in three stages ran
                                   # at 0.77-0.80x its speed in four, 256x128 at 0.96-0.97x (RESULTS.md run 200)
BLOCK_SCALED_SHALLOW = 3           # a ring this shallow takes narrower store slices where they make room for more:
                                   # 256x128 tiles in four stages beside 32-column slices ran 0.8-1.4% faster than
                                   # in three beside 64-column ones; 128x128 tiles in six beside 32-column slices,
                                   # 0.9-2.6% slower than in five at two of three shapes (RESULTS.md run 152)
MAX_BLOCK_SCALED_SWAP_M = 32       # swapped block-scaled tiles, up to this many rows: 16 and 32 wide they ran 1.04-1.82x
                                   # cuBLAS's blockwise path at M = 16 and 32, where C's own 128-row tiles ran
                                   # 0.76-0.88x and 0.78-1.50x; 64 wide, 0.97-1.08x the time of C's tiles, slower at
                                   # two of three weights (benchmarks/RESULTS.md runs 128, 131, 132)


def classic_space(m, n, num_sms, k_major_b=False):
    """CLASSIC for one problem: the 128-wide N tile only when 128x256 tiles are too few to give every SM one;
    once they are not, the CLASSIC_K_MAJOR_TILE_N widths too where B is K-major (`k_major_b`).

    Once every SM is busy, 128x128 tiles (a 64x128 WGMMA per warpgroup, re-reading
    A and B from SMEM more often per FLOP) measured ~8% slower on the H200 at
    8192x28672x4096, a cost the model does not see; below that they fill idle SMs.
    """
    if few_tiles(m, n, num_sms):
        return CLASSIC
    narrow = min(CLASSIC["tile_n"])
    widths = [t for t in CLASSIC["tile_n"] if t != narrow] + list(CLASSIC_K_MAJOR_TILE_N if k_major_b else ())
    return dict(CLASSIC, tile_n=sorted(widths))


def few_tiles(m, n, num_sms):
    """True when 128x256 output tiles are fewer than the SMs."""
    return -(-m // hopper_matmul.CONFIG["tile_m"]) * -(-n // max(CLASSIC["tile_n"])) < num_sms


def round_waste(rows, cols, tile_rows, tile_cols, num_sms):
    """The fraction of the SMs' tile area over whole rounds of tiles that computes no element of a rows x cols
    output: the tiles' padding and the SMs a last, partial round leaves idle."""
    tiles = -(-rows // tile_rows) * -(-cols // tile_cols)
    rounds = -(-tiles // num_sms)
    return 1 - rows * cols / (rounds * num_sms * tile_rows * tile_cols)


def filling_designs(m, n, dtype, num_sms, a_layout, b_layout, tile_m=FILL_TILE_M, count=FILL_WIDTHS):
    """Swapped tile_m-row cooperative tiles (C^T's) of the `count` widths (`swapped_widths`) that waste least
    of the rounds (`round_waste`; of equal waste the wider), with a classic tile's stages (fewer where they do not
    fit) and the widest store slices that cost none of them (`_swapped_store_slice`)."""
    widths = sorted(swapped_widths(tile_m), key=lambda t: (round_waste(n, m, tile_m, t, num_sms), -t))[:count]
    designs = []
    for t in widths:
        d = dict(tile_m=tile_m, tile_n=t, schedule="cooperative", swap_ab=True)
        d["epi_tile_n"] = _swapped_store_slice(d, dtype, a_layout, b_layout)
        d["stages"] = _deepest_classic_ring(d, dtype, a_layout, b_layout)
        designs.append(d)
    return designs


def _swapped_store_slice(design, dtype, a_layout, b_layout):
    """The widest store slice (STORE_SLICES) of a swapped design that keeps as deep a ring as the narrowest: the
    last slice of a tile may be narrower, so a width such as 152 (19 of WGMMA's 8-column steps) stores four slices
    of 32 and one of 24, not 19 of 8 (256x160 tiles stored 8 columns at a time ran 6% slower than 32 at a time at
    5000 x 1000 x 3000, RESULTS.md run 140)."""
    return _widest_slice_of_deepest_ring(design, lambda **d: _deepest_classic_ring(d, dtype, a_layout, b_layout))


def _widest_slice_of_deepest_ring(design, ring):
    """The widest store slice (STORE_SLICES, at most the tile's width) with which `ring(**design)` keeps as many
    stages as with the narrowest (a 256x128 block-scaled tile keeps four stages beside 32-column slices, three
    beside 64-column ones; `_swapped_store_slice`)."""
    widths = [w for w in STORE_SLICES if w <= design["tile_n"]]
    deepest = ring(**dict(design, epi_tile_n=widths[-1]))
    return next(w for w in widths if ring(**dict(design, epi_tile_n=w)) == deepest)


def _deepest_classic_ring(design, dtype, a_layout, b_layout):
    """The most stages, up to a classic tile's, that fit `design`."""
    return hopper_matmul.deepest_stages(dtype, a_layout=a_layout, b_layout=b_layout,
                                        most=hopper_matmul.CONFIG["stages"], **design)


def swapped_tile(m, n, dtype, num_sms, a_layout, b_layout):
    """The least-waste swapped SWAPPED_TILE_M-row tile (`filling_designs`); None at decode's M (up to MAX_SWAP_M),
    where its width along M would be mostly padding."""
    if m <= MAX_SWAP_M:
        return None
    (design,) = filling_designs(m, n, dtype, num_sms, a_layout, b_layout, tile_m=SWAPPED_TILE_M, count=1)
    return design


def filling(params):
    """True for a design of filling_designs (the decode designs swap narrower tiles)."""
    return params.get("swap_ab", False) and params.get("tile_m") == FILL_TILE_M


def swapped_rows(params):
    """True for a swapped tile as wide along M as filling_designs make them (either height): a candidate over the
    measured classic tiles only by FILL_MARGIN."""
    return params.get("swap_ab", False) and params["tile_n"] >= min(FILL_TILE_N)


def clusterable(params):
    """True for a design tilegemm runs in clusters: one GEMM over the whole K in 128-row tiles (classic, or swapped
    as wide along M as filling_designs make them). 64-row and decode tiles in clusters measured slower than their
    plain twins at every decode cell tried (0.31-1.0x, benchmarks/RESULTS.md run 60)."""
    return (not two_pass(params) and params.get("batch") is None
            and (family(params) == "classic 128-row" or swapped_rows(params)))


def two_pass(params):
    """True for a design of two kernels, the GEMM and a pass summing its partials (split-K not summed by the last
    slices, a stream-K tail)."""
    return (params.get("split_k", 1) > 1 and not last_slice(params)) or params.get("stream_k", 1) > 1


def fusable(params, transposable=False):
    """True for a design that can run a fused epilogue: a split-K design (where the slices are summed, on the sum),
    one storing C's own tiles from its GEMM (not a stream-K tail's partial ones) and, for an epilogue that can run on
    C^T's tiles (`transposable`: epilogue.transposable; its fn is checked as it is traced), one-pass swap-AB."""
    if params.get("split_k", 1) > 1:
        return True
    if params.get("stream_k", 1) > 1:
        return False
    return transposable or not params.get("swap_ab")


def in_clusters(params, size, device, num_sms, along="m"):
    """Design `params` in clusters of `size` blocks (1: the plain design) sharing by multicast the MMA's B tile
    (`along` "m": blocks of vertically adjacent tiles) or its A tile ("n"), its grid the clusters the device sheet
    says a GPU of `num_sms` SMs holds at once (for the GPU in use, what its driver says: dispatch.live_sheet)."""
    plain = {name: v for name, v in params.items() if name not in CLUSTER_KEYS}
    if size == 1:
        return dict(plain, num_sms=num_sms)
    return dict(plain, **{f"cluster_{along}": size}, num_sms=get_device(device).cluster_grid_sms(size, num_sms))


GRID_ORDER = {key: hopper_matmul.CONFIG[key] for key in ("grid_minor_dim", "grid_tile_width")}   # tiles' order
CLUSTER_KEYS = ("cluster_m", "cluster_n")   # hopper_matmul.build's: blocks along M sharing B, along N sharing A


def cluster_size(params):
    """The blocks in a cluster of design `params` (1: none)."""
    return max(params.get(key, 1) for key in CLUSTER_KEYS)


def on_the_grid(params, device, num_sms):
    """Design `params` (in clusters along either axis, or none) on the grid in_clusters gives it."""
    return in_clusters(params, cluster_size(params), device, num_sms,
                       along="n" if params.get("cluster_n", 1) > 1 else "m")


FAMILIES = ("classic 128-row", "classic 128-row + stream-K", "filling, swapped 256-row", "filling, swapped 128-row",
            "64-row", "swap-AB", "swap-AB + split-K", "64-row + split-K")


def family(params):
    """Which of FAMILIES a design (build() parameters) belongs to."""
    if filling(params):
        return "filling, swapped 256-row"
    if swapped_rows(params):
        return "filling, swapped 128-row"
    split = params.get("split_k", 1) > 1
    if params.get("swap_ab"):
        return "swap-AB + split-K" if split else "swap-AB"
    if params.get("tile_m") == 64:
        return "64-row + split-K" if split else "64-row"
    return "classic 128-row + stream-K" if params.get("stream_k", 1) > 1 else "classic 128-row"


def family_firsts(ranked, per_family=1):
    """The first `per_family` designs of each family in `ranked` ([(params, budget)], fastest first), in its order."""
    taken = {}
    for params, budget in ranked:
        name = family(params)
        if taken.get(name, 0) < per_family:
            taken[name] = taken.get(name, 0) + 1
            yield params, budget


def describe(params):
    """'64x16 pingpong, 16 stages, split 2' (', 32-column stores' where store slices are not the builder's
    default width, ', clusters of 2' where blocks pair up along M, ', clusters of 2 along N' where they share A)
    for build() parameters."""
    text = f"{params.get('tile_m', 128)}x{params['tile_n']} {params['schedule']}, {params.get('stages', 4)} stages"
    stores = params.get("epi_tile_n", hopper_matmul.CONFIG["epi_tile_n"])
    text += f", {stores}-column stores" if stores != hopper_matmul.CONFIG["epi_tile_n"] else ""
    text += f", split {params['split_k']}" if params.get("split_k", 1) > 1 else ""
    text += " summed by the last slice" if last_slice(params) else ""
    text += f", stream-K tail x{params['stream_k']}" if params.get("stream_k", 1) > 1 else ""
    text += ", block scales padded first" if params.get("pad_scales") else ""
    text += ", block scales read from GMEM" if params.get("gmem_scales") else ""
    text += f", loads promoted to {params['l2_promotion']} B in L2" if params.get("l2_promotion") else ""
    order = [params.get(key, default) for key, default in GRID_ORDER.items()]
    text += f", tiles in snakes {order[1]} wide, {'mn'[order[0]]} minor" if order != list(GRID_ORDER.values()) else ""
    text += f", clusters of {params['cluster_m']}" if params.get("cluster_m", 1) > 1 else ""
    return text + (f", clusters of {params['cluster_n']} along N" if params.get("cluster_n", 1) > 1 else "")


def label(params):
    """'swap-AB + split-K: 64x16 pingpong, 16 stages, split 2': a design's family and description."""
    return f"{family(params)}: {describe(params)}"


def base_designs(m, n, dtype, num_sms, a_layout, b_layout):
    """The designs over the whole K, as build() parameters beyond the problem's (a 64-row or swap-AB design's
    stages are set per split by `with_stages`).

    At decode-sized M (up to MAX_64_ROW_M) with too few tiles to give every SM one, the problem streams a weight
    and the classic tiles keep their deepest ring too: 128x128 tiles measured 0.97x cuBLAS at 128 x 14336 x 4096
    with 6 stages against 0.92x with 4 (RESULTS.md run 52); elsewhere they take a fifth stage where it fits
    (`_classic_ring`).
    """
    k_major_b = hopper_matmul.mma_layouts(a_layout, b_layout, False)[1] == "nk"
    space = classic_space(m, n, num_sms, k_major_b)
    designs = [dict(tile_n=t, schedule=s) for t in space["tile_n"] for s in space["schedule"]]
    if few_tiles(m, n, num_sms) and m <= MAX_64_ROW_M:
        for d in designs:
            d["stages"] = hopper_matmul.deepest_stages(dtype, a_layout=a_layout, b_layout=b_layout, **d)
        widths = sorted(set(ROWS_64_TILE_N + (ROWS_64_K_MAJOR_TILE_N if k_major_b else ())))
        designs += [dict(tile_m=64, tile_n=t, schedule="pingpong", epi_tile_n=_store_slice(t)) for t in widths]
    else:
        designs = [_classic_ring(d, dtype, a_layout, b_layout) for d in designs]
    if m <= MAX_SWAP_M:
        t = min(t for t in SWAP_TILE_N if t >= m)
        designs += [dict(tile_m=64, tile_n=t, epi_tile_n=t, schedule="pingpong", swap_ab=True),
                    dict(tile_m=128, tile_n=t, epi_tile_n=t, schedule="cooperative", swap_ab=True)]
    return designs


def _classic_ring(design, dtype, a_layout, b_layout):
    """A tile of C over the whole K, wider than 128, with CLASSIC_RING stages, in the widest store slices (down to
    DEEP_RING_SLICE) that make room for them; where none does, and 128 wide, as it is (the flagship's four stages,
    64-column slices)."""
    if design["tile_n"] <= min(CLASSIC["tile_n"]):
        return design
    for width in (w for w in STORE_SLICES if w >= DEEP_RING_SLICE):
        deeper = dict(design, epi_tile_n=width)
        if hopper_matmul.deepest_stages(dtype, a_layout=a_layout, b_layout=b_layout, most=CLASSIC_RING,
                                        **deeper) == CLASSIC_RING:
            return dict(deeper, stages=CLASSIC_RING)
    return design


def _store_slice(tile_n):
    """The widest store slice (STORE_SLICES) that divides a tile of C tile_n wide."""
    return next(w for w in STORE_SLICES if tile_n % w == 0)


def with_stages(design, dtype, a_layout, b_layout):
    """A 64-row or decode swap-AB design with the deepest stage ring that fits it: decode is memory-bound, and a
    64x128 ping-pong tile measured 0.99x cuBLAS at 128 x 8192 x 8192 with its own 8 stages against 0.92x with the 6
    that fit beside a second-pass split's f32 epilogue (RESULTS.md run 52; a split summed by its last slices stores
    C in its own dtype, as the unsplit design). Other designs as they are."""
    if not (design.get("tile_m") == 64 or design.get("swap_ab")) or swapped_rows(design):
        return design
    shape = {name: design[name] for name in ("tile_m", "tile_n", "schedule", "swap_ab", "epi_tile_n") if name in design}
    return dict(design, stages=hopper_matmul.deepest_stages(dtype, a_layout=a_layout, b_layout=b_layout, **shape))


def split_choices(tiles, k, num_sms, tile_k):
    """split_k values worth budgeting for a design of `tiles` output tiles in `tile_k`-wide K steps: 1, and those
    leaving every slice work (hopper_matmul.splits_that_fit; fp8's steps are twice as wide as 16-bit ones) while
    making at most MAX_SPLIT_UNITS units of work per SM."""
    if tiles >= num_sms:
        return [1]
    return [s for s in hopper_matmul.splits_that_fit(k, tile_k, MAX_SPLIT_K) if s * tiles <= MAX_SPLIT_UNITS * num_sms]


def stream_k_choices(tiles, k, num_sms, tile_k):
    """stream_k values worth budgeting for a classic design of `tiles` tiles after at least one whole round: those
    whose tail slices take fewer rounds than the slices are thinner (each round of slices is 1/S of a tile's time),
    leaving every slice work (hopper_matmul.splits_that_fit)."""
    full_rounds, tail = divmod(tiles, num_sms)
    if not (full_rounds and tail):
        return []
    return [s for s in hopper_matmul.splits_that_fit(k, tile_k, MAX_STREAM_K)
            if s > 1 and -(-tail * s // num_sms) < s]


def predictions(m, n, k, dtype_name, device, num_sms, a_layout="mk", b_layout="kn", batch=None, split=None):
    """[(params, DesignBudget)] of every design for this problem (`batch` of them in one launch, if given),
    fastest predicted first (a filling design ranked as if FILL_MARGIN slower: picked over the measured classic
    tiles only where the model predicts a clear gain); params are complete build() keyword arguments (layouts,
    num_sms and batch included). Designs the builder or verifier refuses are left out; a batch is not split over K.
    `split`: only designs split over K in exactly that many slices (1: one pass), of every family, and no stream-K
    (a batch-invariant call's: `invariant_split`)."""
    dtype = dtypes.as_dtype(dtype_name)
    ranked = []
    candidates = base_designs(m, n, dtype, num_sms, a_layout, b_layout)
    if m > MAX_SWAP_M:   # at decode's M a filling tile's width (128 or more along M) would be mostly padding
        candidates += filling_designs(m, n, dtype, num_sms, a_layout, b_layout)
        candidates.append(swapped_tile(m, n, dtype, num_sms, a_layout, b_layout))
    for design in candidates:
        splits = [1] if batch is not None else [split] if split is not None else split_choices(
            _tiles(m, n, design), k, num_sms, hopper_matmul.default_tile_k(dtype))
        for split_k in splits:
            if split is None and split_k > 1 and (filling(design) or not (design.get("swap_ab")
                                                                          or design.get("tile_m") == 64)):
                continue   # split-K serves the small designs: a 128-row tile's f32 epilogue would cost it stages
            params = dict(with_stages(design, dtype, a_layout, b_layout), num_sms=num_sms,
                          a_layout=a_layout, b_layout=b_layout)
            if batch is not None:
                params["batch"] = batch
            if split_k > 1:
                params.update(split_k=split_k, split_reduction="last_slice")
            prediction = design_prediction(m, n, k, dtype, device, params)
            if prediction is not None and prediction.gemm.legal:
                ranked.append((params, prediction))
    ranked += _stream_k_twins(m, n, k, dtype, device, ranked) if batch is None and split is None else []
    ranked += _cluster_twins(m, n, k, dtype, device, ranked)
    ranked = [(with_trigger(params, prediction), prediction) for params, prediction in ranked]
    return sorted(ranked, key=lambda item: (rank_s(*item), _rounds(item[1], num_sms), -item[1].gemm.tiles))


def with_trigger(params, prediction):
    """`params`, with the flagship's trigger_dependents where the model finds the design bound by its SMs: there the
    next call's blocks launching once this call's loads are issued took 2.7-3.4% off one-round calls
    (1500x2504x1000, 777x3000x1400) and moved 2048^3-8192^3 by under 0.4%; where memory bound it, 7-13% was lost
    (1x14336x4096, 128x8192x8192; benchmarks/RESULTS.md runs 166 and 170)."""
    return dict(params, trigger_dependents=True) if prediction.gemm.bound == SM_BOUND else params


def _stream_k_twins(m, n, k, dtype, device, ranked):
    """[(params, DesignBudget)] of the classic designs in `ranked` with each of their `stream_k_choices`."""
    twins = []
    for params, _ in ranked:
        if family(params) != "classic 128-row":
            continue
        for split in stream_k_choices(_tiles(m, n, params), k, params["num_sms"],
                                      hopper_matmul.default_tile_k(dtype)):
            twin = dict(params, stream_k=split)
            prediction = design_prediction(m, n, k, dtype, device, twin)
            if prediction is not None and prediction.gemm.legal:
                twins.append((twin, prediction))
    return twins


def _cluster_twins(m, n, k, dtype, device, ranked):
    """The cluster twins (`_clustered`) of the designs in `ranked` that may beat the fastest design found so far:
    multicast cuts only what the blocks read from L2, so a design's SM and DRAM times bound its twin's from below
    (`_twin_floor_s`), and a design whose floor is no faster is not budgeted in clusters (each twin costs a trace)."""
    best = min((rank_s(*item) for item in ranked), default=float("inf"))
    twins = []
    for params, prediction in sorted(ranked, key=lambda item: _twin_floor_s(*item)):
        if _twin_floor_s(params, prediction) >= best:
            break
        for twin in _clustered(m, n, k, dtype, device, params, prediction):
            twins.append(twin)
            best = min(best, rank_s(*twin))
    return twins


def _twin_floor_s(params, prediction):
    """The least rank time (`rank_s`) design `params` could reach in clusters: its own, without the L2 bound."""
    g = prediction.gemm
    return (max(g.sm_time_s, g.dram_time_s) + g.device.launch_overhead_s) * rank_s(params, prediction) \
        / prediction.predicted_s


def _clustered(m, n, k, dtype, device, params, prediction):
    """[(params, DesignBudget)] of design `params` in clusters where L2 bounds it (multicast cuts what the blocks
    read from L2) and it is `clusterable`: the largest of CLUSTER_SIZES predicted within CLUSTER_TIE of
    the fastest, if CLUSTER_MARGIN faster than the plain design; else nothing."""
    if prediction.gemm.bound != "L2" or not clusterable(params):
        return []
    twins = [(clustered, design_prediction(m, n, k, dtype, device, clustered))
             for clustered in (in_clusters(params, size, device, params["num_sms"]) for size in CLUSTER_SIZES)]
    twins = [(clustered, twin) for clustered, twin in twins if twin is not None and twin.gemm.legal]
    if not twins:
        return []
    fastest = min(twin.predicted_s for _, twin in twins)
    clustered, twin = next((c, t) for c, t in twins if t.predicted_s <= fastest * (1 + CLUSTER_TIE))
    return [(clustered, twin)] if twin.predicted_s * (1 + CLUSTER_MARGIN) <= prediction.predicted_s else []


def design_prediction(m, n, k, dtype, device, params):
    """The model's DesignBudget of design `params` (complete build() parameters) for this problem; None where the
    builder or verifier refuses its kernel."""
    config = _frame_config(m, n, k, dtype, params)
    if config is None:
        return None
    split_k = params.get("split_k", 1)
    rows = hopper_matmul.workspace_rows(m, _m_tile(params)) if split_k > 1 else None
    return design_budget(config, (m, n, k), device, swap_ab=params.get("swap_ab", False), split_k=split_k,
                         slice_rows=rows, batch=params.get("batch") or 1, stream_k=params.get("stream_k", 1),
                         in_kernel=last_slice(params))


def rank_s(params, prediction):
    """The time a design is ranked by: its predicted time, FILL_MARGIN more for a swapped tile wide along M and
    STREAM_K_MARGIN more for a stream-K tail."""
    margin = FILL_MARGIN if swapped_rows(params) else STREAM_K_MARGIN if params.get("stream_k", 1) > 1 else 0
    return prediction.predicted_s * (1 + margin)


def _rounds(prediction, num_sms):
    """Work units per SM of a design's main kernel: the tie-break between designs the model predicts equal
    (DRAM-bound decode designs often are), fewer first: one round of 112 swapped 128x16 units measured 5% faster
    than two rounds of 224 64x16 ones at 1-16 x 14336 x 4096 (benchmarks/RESULTS.md run 30). Of as many rounds,
    more units first: more SMs stream the weight (128 64x224 tiles measured 1.03x cuBLAS at 128 x 14336 x 4096
    where 112 128x128 ones measured 0.97x, both with their deepest rings, run 52)."""
    return -(-prediction.gemm.tiles // num_sms)


@functools.lru_cache(maxsize=256)
def choose(m, n, k, dtype_name, device, num_sms, a_layout="mk", b_layout="kn", batch=None, fused=False, split=None):
    """The build() parameters of the design the model predicts fastest for this problem (`batch` of them in one
    launch, if given), as a hashable tuple of items; the design's kernels trace (the verifier accepts them).
    `fused`: a design that can run this fused epilogue (an epilogue.Fused) or, True, any such epilogue
    (`fusable`); `split`: a design split over K in exactly that many slices (`predictions`; 1: one kernel, summing
    K in one pass). A one-pass swap-AB design is traced with the epilogue (which it runs only if elementwise); the
    others without it, so that an error in the epilogue itself reaches the caller from the chosen design's build."""
    spec = fused if isinstance(fused, epilogue.Fused) else None
    transposable = spec is not None and epilogue.transposable(spec, m, n)
    for params, _ in predictions(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, batch, split):
        if fused and not fusable(params, transposable):
            continue
        on_c_transposed = params.get("swap_ab") and not two_pass(params)
        try:
            build(m, n, k, dtype_name, tuple(sorted(params.items())), spec if on_c_transposed else None).trace_check()
        except (KernelError, ValueError):
            continue
        return tuple(sorted(params.items()))
    raise KernelError(f"no design of tg.matmul is legal for {m}x{n}x{k} {dtype_name} on {device}")


@functools.lru_cache(maxsize=256)
def invariant_split(n, k, dtype_name, device, num_sms, b_layout="kn"):
    """The K split of every batch-invariant call against an [N, K] operand b (a weight): the one the model chooses
    for a single row of a (a decode step; not a tg.tune_matmul record, which may change), so that decoding keeps its
    speed, and every M then sums K in the same slices, in the same order (1: in one pass)."""
    return dict(choose(1, n, k, dtype_name, device, num_sms, "mk", b_layout)).get("split_k", 1)


def block_scaled_predictions(m, n, k, dtype_name, device, num_sms, block_scales, one_pass=False):
    """[(params, DesignBudget)] of the block-scaled designs for this problem (scales read as `block_scales`
    stores them; blockscaling.UNIT: promotion alone), fastest predicted first; params are complete build() keyword
    arguments; `one_pass`: only those summing K in one pass (a batch-invariant call's, whatever its M). Where TMA
    cannot copy the scales as stored, each design runs with the consumers reading them from GMEM, and again with them
    padded first (`pad_scales`: tilegemm.ops.scale_padding) and staged. At decode's M (fewer rows than a tile), the
    scales are read from GMEM and the designs also run split over K (`split_choices` cutting the scale blocks
    evenly; each tile's last slice sums the promoted partials, as in `predictions`), so that every SM streams the
    weight: there, staged (or padded) scales cost the stage rings a stage and ran 1.2-2x slower than the same tiles
    reading them from GMEM (benchmarks/RESULTS.md run 109). Up to MAX_BLOCK_SCALED_SWAP_M rows, swap-AB tiles join
    them (the weight's 128 rows, one of its scale blocks, on WGMMA's row side; the tokens a SWAP_TILE_N-wide tile)
    with the deepest ring that fits, as the f16 decode designs (memory-bound: loads in flight)."""
    dtype = dtypes.as_dtype(dtype_name)
    ranked = []
    tile_m, *wider = hopper_matmul.BLOCK_SCALED_ROWS
    decode = m < tile_m
    block_scales = block_scales.read_from_gmem() if decode else block_scales
    unpadded = block_scales.unpadded_rows(m, n, k)
    padding = [False] + ([True] if any(unpadded) and not decode else [])
    shapes = [(pad, dict(tile_m=rows, tile_n=tile_n, tile_k=blockscaling.BLOCK, schedule="cooperative",
                         a_layout="mk", b_layout="nk"))
              for pad in padding for rows in [tile_m] + ([] if decode else wider) for tile_n in BLOCK_SCALED_TILE_N]
    if m <= MAX_BLOCK_SCALED_SWAP_M:
        t = min(t for t in SWAP_TILE_N if t >= m)
        shapes.append((False, dict(shapes[0][1], tile_n=t, epi_tile_n=t, swap_ab=True)))
    for pad, shape in shapes:
        scales = block_scales.with_padding() if pad else block_scales
        splits = [1] if not decode or one_pass else [s for s in split_choices(_tiles(m, n, shape), k, num_sms,
                                                                               blockscaling.BLOCK)
                                                     if blockscaling.blocks(k) % s == 0]
        swap = shape.get("swap_ab", False)
        for split_k in splits:
            slots = None if swap else scales.staged_slots(m, n, k, shape["tile_m"])
            most = hopper_matmul.MAX_STAGES if swap else stage_cap(device, BLOCK_SCALED_STAGES, slots)
            ring = functools.partial(hopper_matmul.deepest_stages, dtype, promoted=True, split_k=split_k,
                                     scale_slots=slots, most=most)
            if not swap and ring(**shape) <= BLOCK_SCALED_SHALLOW:
                shape = dict(shape, epi_tile_n=_widest_slice_of_deepest_ring(shape, ring))
            split = dict(split_k=split_k, split_reduction="last_slice") if split_k > 1 else {}
            params = dict(shape, stages=ring(**shape), num_sms=num_sms, **split,
                          **({"gmem_scales": True} if decode else {}))
            prediction = block_scaled_prediction(m, n, k, dtype, device, params, scales)
            if prediction is None:
                continue
            if pad:
                params["pad_scales"] = True
                prediction = replace(prediction, prepass_s=padding_s([rows for rows in unpadded if rows], device))
            if prediction.gemm.legal:
                ranked.append((params, prediction))
    return sorted(ranked, key=lambda item: item[1].predicted_s)


def stage_cap(device, most, slots):
    """The most stages of a block-scaled tile: `most`, or fewer where it stages its scales (`slots`, as
    BlockScales.staged_slots) on a device whose sheet measured fewer faster (DeviceSpec.block_scaled_stages)."""
    cap = get_device(device).block_scaled_stages if slots is not None else None
    return most if cap is None else min(most, cap)


# The build() parameters the depth of a design's ring depends on, besides its scales and split.
RING_KEYS = ("tile_m", "tile_n", "tile_k", "epi_tile_n", "schedule", "a_layout", "b_layout")


def staged_rings(m, n, k, dtype_name, params, block_scales):
    """Block-scaled design `params` at each other ring depth from BLOCK_SCALED_MIN_STAGES to the deepest that fits,
    where it stages its scales (none otherwise): the model predicts these depths alike, where the H100 ran 128x128
    tiles 1.05-1.19x as fast in four stages as in five and the H200 0.96-0.99x (benchmarks/RESULTS.md runs 199-205),
    so tuning times them."""
    scales = block_scales.with_padding() if params.get("pad_scales") else block_scales
    slots = scales.staged_slots(m, n, k, params["tile_m"])
    if params.get("gmem_scales") or params.get("swap_ab") or slots is None:
        return []
    shape = {key: params[key] for key in RING_KEYS if key in params}
    deepest = hopper_matmul.deepest_stages(dtypes.as_dtype(dtype_name), promoted=True, scale_slots=slots,
                                           split_k=params.get("split_k", 1), most=BLOCK_SCALED_STAGES, **shape)
    return [dict(params, stages=s) for s in range(BLOCK_SCALED_MIN_STAGES, deepest + 1) if s != params["stages"]]


def block_scaled_prediction(m, n, k, dtype, device, params, scales):
    """The DesignBudget of block-scaled design `params` reading `scales` (its scales' padding pass aside); None
    where the builder or verifier refuses it."""
    built, scales = _as_built({key: value for key, value in params.items() if key != "pad_scales"},
                              scales.with_padding() if params.get("pad_scales") else scales)
    try:
        kernel = hopper_matmul.build(m, n, k, dtype=dtype, block_scales=scales, **built)
        config = config_from_graph(kernel.trace(*kernel.in_specs))   # a last slice's workspace and counters too
    except (KernelError, ValueError):
        return None
    split_k = params.get("split_k", 1)
    rows = hopper_matmul.workspace_rows(m, _m_tile(params)) if split_k > 1 else None
    return design_budget(config, (m, n, k), device, swap_ab=params.get("swap_ab", False), split_k=split_k,
                         slice_rows=rows, in_kernel=last_slice(params))


def _as_built(params, block_scales):
    """(design `params` as hopper_matmul.build takes them, `block_scales` as its consumers read them): a design's
    `gmem_scales` says they read the scales from GMEM, never staged."""
    built = {key: value for key, value in params.items() if key != "gmem_scales"}
    return built, block_scales.read_from_gmem() if params.get("gmem_scales") else block_scales


@functools.lru_cache(maxsize=256)
def choose_block_scaled(m, n, k, dtype_name, device, num_sms, block_scales, one_pass=False):
    """The build() parameters (a hashable tuple of items) of the block-scaled design the model predicts fastest
    (`one_pass`: of those summing K in one pass)."""
    for params, _ in block_scaled_predictions(m, n, k, dtype_name, device, num_sms, block_scales, one_pass):
        return tuple(sorted(params.items()))
    raise KernelError(f"no block-scaled design of tg.matmul is legal for {m}x{n}x{k} {dtype_name} on {device}")


def _specs(m, n, k, dtype, params, fused, block_scales):
    """The specs of the arrays design `params`' kernel takes: a and b as stored (with a batch dimension; b of
    params' `b_dtype` where given), block scales, then a fused epilogue's tensors."""
    lead = (params["batch"],) if params.get("batch") else ()
    b_dtype = dtypes.as_dtype(params["b_dtype"]) if "b_dtype" in params else None
    return ([ShapeDtype(lead + spec.shape, spec.dtype)
             for spec in operand_specs(m, n, k, dtype, params["a_layout"], params["b_layout"], b_dtype)]
            + list(block_scales.specs(m, n, k) if block_scales is not None else ())
            + list(fused.specs if fused is not None else ()))


@functools.lru_cache(maxsize=64)
def build(m, n, k, dtype_name, params, fused=None, block_scales=None):
    """The callable running design `params` (items): the flagship kernel (with the fused epilogue `fused`, an
    ops.epilogue.Fused, and the block scales `block_scales`, a blockscaling.BlockScales, if given), or its
    split-K or stream-K pass and reduction."""
    params, block_scales = _as_built(dict(params), block_scales)
    dtype = dtypes.as_dtype(dtype_name)
    if params.pop("pad_scales", False):
        return _with_padded_scales(m, n, k, dtype, params, fused, block_scales)
    split_k, stream_k = params.get("split_k", 1), params.get("stream_k", 1)
    specs = _specs(m, n, k, dtype, params, fused, block_scales)
    if last_slice(params):   # one kernel: each tile's last K slice sums the partials and runs the epilogue
        gemm = hopper_matmul.build(m, n, k, dtype=dtype, fused=fused, block_scales=block_scales, **params)
        return LastSlice(gemm, specs, gemm.in_specs[len(specs):])   # the workspace and counters it takes last
    if split_k > 1:   # the epilogue runs on the sum of the slices, in the reduction pass
        gemm = hopper_matmul.build(m, n, k, dtype=dtype, block_scales=block_scales, **params)
        reduce = splitk_reduce.build(split_k, m, n, hopper_matmul.workspace_rows(m, _m_tile(params)), dtype=dtype,
                                     fused=fused)
        return splitk_reduce.SplitK(gemm, reduce, specs, gemm_inputs=len(specs) - len(fused.specs if fused else ()))
    gemm = hopper_matmul.build(m, n, k, dtype=dtype, fused=fused, block_scales=block_scales, **params)
    if stream_k > 1:
        return splitk_reduce.StreamK(gemm, _tail_reduce(m, n, k, dtype, params), specs)
    return Single(gemm, specs)


def _with_padded_scales(m, n, k, dtype, params, fused, block_scales):
    """Design `params` (block-scaled, its scales staged) run on `block_scales` padded first by the kernels of
    tilegemm.ops.scale_padding where their rows are not whole TMA units."""
    padded = block_scales.with_padding()
    gemm = hopper_matmul.build(m, n, k, dtype=dtype, fused=fused, block_scales=padded, **params)
    pads = [None if rows is None else scale_padding.build_pad(*rows) for rows in block_scales.unpadded_rows(m, n, k)]
    return scale_padding.PaddedScales(gemm, pads, _specs(m, n, k, dtype, params, fused, block_scales),
                                      _specs(m, n, k, dtype, params, fused, padded))


def _tail_reduce(m, n, k, dtype, params):
    """The second pass of design `params`' stream-K tail: its tiles in the order the GEMM walks them."""
    config = dict(hopper_matmul.CONFIG, **params)
    tile_k = config["tile_k"] or hopper_matmul.default_tile_k(dtype)
    tail = hopper_matmul.StreamKTail.of(_tiles(m, n, params), config["num_sms"], k, tile_k, config["stream_k"])
    return splitk_reduce.build_tail(tail, m, n, config["tile_m"], config["tile_n"], config["num_sms"], dtype,
                                    config["grid_minor_dim"], config["grid_tile_width"])


class Single:
    """A one-kernel design: the flagship kernel itself, with `trace_check` tracing it for its operands."""

    def __init__(self, kernel, specs):
        self.kernel, self.specs = kernel, specs

    def trace_check(self):
        self.kernel.trace(*self.specs)

    def compile(self, arch="sm_90a"):
        """Compiles the kernel for its operands (into the compile cache)."""
        self.kernel.lower(*self.specs, arch=arch).compile()

    def __call__(self, *arrays, **options):
        return self.kernel(*arrays, **options)

    def prepared(self, signature, barrier_timeout=None):
        return self.kernel.prepared(signature, barrier_timeout)


class LastSlice(Single):
    """A split-K design whose last K slice of each tile sums the partials (one kernel, tg.count_arrival): each call
    hands the kernel the workspace and zeroed counters of its stream (tilegemm.runtime.counters) and returns c."""

    def __init__(self, kernel, specs, carried):
        super().__init__(kernel, specs)
        self.carried = tuple(carried)   # the specs of the workspace and the counters (last_slice_scratch)
        self._carried_signature = None  # of the arrays a device call carried (the same for every such call)

    def trace_check(self):
        self.kernel.trace(*self.specs, *self.carried)

    def compile(self, arch="sm_90a"):
        self.kernel.lower(*self.specs, *self.carried, arch=arch).compile()

    def __call__(self, *arrays, out=None, interpret=False, debug=None, seed=None):
        carried = tuple(np.zeros(s.shape, s.dtype) for s in self.carried) if interpret else self._carried_for(arrays)
        if not interpret:
            self._carried_signature = readers.signature(carried)
        c, _, _ = self.kernel(*arrays, *carried, out=None if out is None else (out, None, None), interpret=interpret,
                              debug=debug, seed=seed)
        return c

    def prepared(self, signature, barrier_timeout=None):
        """The kernel's prepared launch with the stream's workspace and counters added, once a device call with
        this signature has run; it returns [c]."""
        if signature is None or self._carried_signature is None:
            return None
        launch = self.kernel.prepared(signature + self._carried_signature, barrier_timeout)
        if launch is None:
            return None

        def run(arrays, outs, poison):
            return launch((*arrays, *self._carried_for(arrays)), None if outs is None else [outs[0], None, None],
                          poison)[:1]
        return run

    def _carried_for(self, arrays):
        """The workspace and counters of the stream of a device call on `arrays` (tilegemm.runtime.counters)."""
        return counters_for(arrays, self.carried[:1], self.carried[1:])


def last_slice(params):
    """True for a split-K design whose last K slices sum the partials in the kernel (one launch)."""
    return params.get("split_k", 1) > 1 and params.get("split_reduction") == "last_slice"


def _tile_m(params):
    """The tile's extent along the MMA's rows: tile_m, the flagship's default where params leave it."""
    return params.get("tile_m", hopper_matmul.CONFIG["tile_m"])


def _m_tile(params):
    """The tile extent along M: tile_n when swapped, tile_m otherwise."""
    return params["tile_n"] if params.get("swap_ab") else _tile_m(params)


def _tiles(m, n, params):
    """Output tiles of one GEMM of the design, in the MMA's frame."""
    rows, cols = (n, m) if params.get("swap_ab") else (m, n)
    return -(-rows // _tile_m(params)) * -(-cols // params["tile_n"])


def _frame_config(m, n, k, dtype, params):
    """The GemmConfig of the design's kernel in the MMA's frame (C^T's tiles when swapped), read off the graph of
    the flagship without split-K traced there (M rounded up to TMA's 16-byte rows); None if that is refused. A
    design's split and batch do not change that graph: it is traced once for all of them."""
    traced = tuple(sorted((name, v) for name, v in params.items()
                          if name not in ("split_k", "batch", "stream_k", "split_reduction", "trigger_dependents")))
    return _traced_frame_config(m, n, k, dtypes.name(dtype), traced)


@functools.lru_cache(maxsize=1024)
def _traced_frame_config(m, n, k, dtype_name, items):
    params, dtype = dict(items), dtypes.as_dtype(dtype_name)
    swap = params.get("swap_ab", False)
    a_layout, b_layout = hopper_matmul.mma_layouts(params["a_layout"], params["b_layout"], swap)
    row = TMA_ALIGN // dtypes.itemsize(dtype)   # elements of a 16-byte row: C^T's rows hold M
    frame = (n, -(-m // row) * row, k) if swap else (m, n, k)
    plain = {name: v for name, v in params.items() if name not in ("swap_ab", "a_layout", "b_layout")}
    try:
        kernel = hopper_matmul.build(*frame, dtype=dtype, a_layout=a_layout, b_layout=b_layout, **plain)
        config = config_from_graph(kernel.trace(*operand_specs(*frame, dtype, a_layout, b_layout)))
    except (KernelError, ValueError):
        return None
    if params.get("tile_m") == 64 and params.get("schedule") == "pingpong":
        # each ping-pong consumer owns whole 64-row tiles: the graph's one accumulator per tile reads as one
        # consumer and two producers
        config = replace(config, consumers=hopper_matmul.CONSUMERS, producers=1, acc_buffers=hopper_matmul.CONSUMERS)
    return config

