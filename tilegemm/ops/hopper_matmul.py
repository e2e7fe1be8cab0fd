"""The Hopper flagship kernel (behind tg.matmul): a persistent, warp-specialized GEMM with a TMA-store epilogue.

What v4 lacks and this kernel adds (the levers state-of-the-art Hopper GEMMs such as cuBLAS pull):

* Persistence: the grid is one block per SM; `tg.nd_loop` deals output tiles
  round-robin to blocks, so block start-up is paid once and the producer
  loads the next tile's first stages while the consumers store this one.
* Rasterisation: `tg.planar_snake` walks tiles in bands of `grid_tile_width`
  along one dimension, so blocks running at the same time share A/B panels in L2.
* Deeper pipelining: the K loop keeps one WGMMA group in flight
  (`wgmma_wait(1)`) and releases each SMEM stage one step late, so the tensor
  cores never wait for the release of the stage they just read.
* A sub-tiled, double-buffered epilogue: each consumer writes 64x64 slices of
  its accumulators into a swizzled SMEM buffer (bank-conflict-free register
  stores) and stores them with TMA while writing the next; where `epi_tile_n` does
  not divide the tile, its last slice is narrower, through a buffer of its own.
* Two consumer schedules (`schedule=`):
  - "cooperative": both consumer warpgroups work on every tile, each on 64 of
    its 128 rows; they store the tile together while the producer prefetches.
  - "pingpong": each consumer owns whole tiles (two 64-row accumulators) and
    the two alternate; a `turn` barrier starts a consumer's main loop only once
    the other has waited for all of its stages, so one consumer's epilogue runs
    under the other's main loop. Its 2 x 64 x tile_n f32 accumulators must fit
    in 240 registers per thread: tile_n <= 192.
  - cooperative 256-row tiles (`tile_m=256`): each consumer holds two 64-row
    accumulators, 128 rows of the tile (tile_n <= 192), so one round of large
    tiles keeps both warpgroups issuing (tg.matmul's filling designs).
* Optional clusters (`cluster_m=2`): the blocks of a cluster compute vertically
  adjacent tiles sharing one B tile; each fetches half of it and TMA
  multicasts it to both, and the `empty` ClusterBarrier frees a stage only once
  every block's consumers released it. Measured no faster on the H200's suite
  shapes; faster on some ragged ones (benchmarks/RESULTS.md runs 49, 51).
  `cluster_n=2` instead: horizontally adjacent tiles sharing one A tile
  (DeepGEMM's multicast of A for its 256 x 128 fp8 tiles). The grid is
  num_sms // cluster clusters, which a GPU may not hold at once (the device
  sheet's `resident_clusters`): pass num_sms=cluster *
  tilegemm.runtime.occupancy.max_active_clusters(compiled) where it holds fewer.

* fp8 operands (e4m3, e5m2): the tensor cores read fp8 only K-major, so A is
  stored [M, K] and B [N, K]; c is bf16 by default for fp8 inputs (`default_out_dtype`).
  The K tile defaults to 128 bytes (`tile_k`). tg.matmul's scales (tilegemm.ops.scaling)
  are a fused epilogue multiplying the f32 accumulators, as torch._scaled_mm does.

* Block-scaled fp8 (`block_scales`, tilegemm.ops.blockscaling): the kernel takes A's 1x128 and B's 128x128
  scales after a and b and promotes every K block: its WGMMAs sum into a fresh f32 partial accumulator,
  which the consumer scales and adds into the tile's accumulator while the next K block's WGMMAs sum into a
  second partial (three accumulators per 64 rows: cooperative 128-row tiles, tile_n <= 128). In 256-row tiles a
  consumer's two 64-row blocks share one partial, summed into and promoted in turn (`promotion_partials`).
  Swapped (decode's M: C^T's tiles, 128 rows of N in one of B's scale blocks), A's scales run along the tile's
  columns. With blockscaling.UNIT the kernel promotes the same way with no scales to read (every scale one).

* A fused epilogue (`fused`, tilegemm.ops.epilogue): each 64 x epi_tile_n slice of
  the accumulators goes through the user's function, with the matching tiles of its
  tensors read straight into the accumulator's register layout, before it is stored.

* Operand layouts (`a_layout`, `b_layout`): the kernel reads A as stored row-major
  [M, K] ("mk") or [K, M] ("km"), and B as [K, N] ("kn") or [N, K] ("nk", a
  PyTorch linear layer's weight, for x @ w.T). TMA copies tiles as the arrays
  store them and the consumers hand the tensor cores a transposed view
  (`tg.transpose_ref`) where the stored order is not the MMA's, so A is read
  K-major ("mk") or M-major ("km") and B N-major ("kn") or K-major ("nk"); no
  operand is copied or transposed in memory.

Roles (num_threads=3): warpgroups 0 and 1 are consumers; warpgroup 2 is the TMA
producer, of which one warp runs the load loop (`core_map`) while the other
three sleep at its exit instead of polling the barriers (worth ~3% on the H200).
setmaxnreg moves registers from the producer to the consumers.

* Small problems (`tile_m=64`, `swap_ab`, `split_k`): a ping-pong consumer may own
  64-row tiles (one accumulator) where 128-row tiles leave SMs idle. `swap_ab=True`
  computes C^T = B^T A^T: B (the weight of a decode step) is the MMA's A, filling
  WGMMA's 64-row side, and M becomes a narrow N tile (tile_n 8-64); the epilogue
  stores each accumulator slice through a transposed view of an SMEM buffer
  (16-bit: swizzled, by stmatrix.trans, `stmatrix_transposes`), so
  C is written in its own layout. `split_k=S` deals (tile, K slice) work units: each
  writes its f32 partial tile into a workspace [S * rows, N] (`workspace_rows`),
  which `splitk_reduce` sums in a fixed order into C: the result does not depend on
  the order blocks ran in (deterministic, batch-invariant for a fixed configuration).
  With `split_reduction="last_slice"` no second kernel runs: each slice writes its
  partial tile straight from its registers, counts its arrival at the tile's counter
  (`tg.count_arrival`), and the last slice to arrive sums the S partials in slice
  order (the same sum, bit for bit) and stores C itself, fused epilogue included.
* Stream-K tail (`stream_k=S`): where the tiles do not divide into whole rounds of
  the grid, the whole rounds run as above and the tiles of the last, partial round
  are each split into S K slices dealt to every block, so that the SMs the tail
  would leave idle share its work. A slice writes its f32 partial tile straight from
  registers into a workspace; `splitk_reduce.build_tail` sums each tile's S partials
  in slice order into C (deterministic, as split-K).

The default configuration is the measured best at 8192^3 on the H200
(benchmarks/RESULTS.md, runs 7-10): 128x192 tiles (a 99.3% full last round,
against 97.0% for 128x256) with ping-pong consumers.
"""
import math
from typing import NamedTuple

from .. import lang as tg
from ..kernel import kernel
from ..lang import dtypes
from ..lang.arch import STMATRIX_ELEMENT_BYTES, WARPGROUP_THREADS
from ..lang.tensorcore import WGMMA
from . import blockscaling
from . import epilogue as fused_epilogue
from .partials import sum_slices
from ..model.layouts import MMA_ORDER, check_layouts, operand_specs, stored

CONFIG = dict(tile_m=128, tile_n=192, tile_k=None, stages=4, epi_tile_n=64, cluster_m=1, cluster_n=1,
              grid_minor_dim=0, grid_tile_width=8, num_sms=132, schedule="pingpong", a_layout="mk", b_layout="kn",
              swap_ab=False, split_k=1, batch=None, stream_k=1, split_reduction="second_pass", l2_promotion=None)
SPLIT_REDUCTIONS = ("second_pass", "last_slice")   # who sums split-K's partials: splitk_reduce, or the last slice
SCHEDULES = ("cooperative", "pingpong")
TILE_ROWS = {(64, "pingpong"), (128, "pingpong"), (128, "cooperative"), (256, "cooperative")}   # (tile_m, schedule)
CONSUMERS = 2
PRODUCER = 2  # warpgroup index of the TMA producer
MMA_ROWS = 64  # rows of one WGMMA accumulator (m64nNk16)
REGISTERS = {"cooperative": (40, 232), "pingpong": (24, 240)}  # (producer, consumer) setmaxnreg per schedule
PARTIALS = 2        # partial accumulators a block-scaled consumer alternates between (one summing, one promoted)
BLOCK_SCALED_ROWS = (128, 256)   # tile_m of a block-scaled (cooperative) kernel: 64 or 128 rows per consumer
PROMOTED_REGISTERS = (24, 240)   # block scaling: a consumer's accumulator and partials are 192 registers a thread
MAX_ACC_REGISTERS = 192  # a consumer's f32 accumulators: a 128x192 ping-pong tile is 192 of its 240 registers a thread
MAX_STAGES = 16       # a deeper ring than this keeps no more bytes in flight that a decode step could use
SWAPPED = {"mk": "nk", "km": "kn", "kn": "km", "nk": "mk"}   # an operand's layout once C^T = B^T A^T swaps roles
TILE_K_BYTES = 128  # the K tile where none is given: one 128-byte swizzle row (64 16-bit or 128 fp8 elements)
SCALES_AHEAD = 2    # K steps before their use a block-scaled consumer reads scales from GMEM (staged: read at use)


class Unit(NamedTuple):
    """One work unit of a block, beyond its output tile: which K steps it sums and where its ring steps start."""
    k_slice: object      # the K slice of a split (split-K, a stream-K tail tile); None: the whole K
    batch_entry: object  # the batch entry (0 unbatched)
    first_step: object   # the block's ring step its first K step takes
    k_steps: int         # K steps it sums
    partial: object = None   # the tile's index among those whose slices' partials go to the kernel's workspace
    #                          (stream-K tail tiles; every tile of a split reduced by its last slice); None: none

    def k_step(self, ki):
        """The K step (of tile_k) that step `ki` of the unit reads."""
        return ki if self.k_slice is None else self.k_slice * self.k_steps + ki


class StreamKTail(NamedTuple):
    """How `build(..., stream_k=S)` deals a problem of `tiles` output tiles to `grid` blocks: `full_rounds` whole
    rounds of whole tiles, then the `tail` tiles left, each split into `split` K slices of `k_steps` steps."""
    full_rounds: int
    tail: int
    split: int
    k_steps: int

    @classmethod
    def of(cls, tiles, grid, k, tile_k, split):
        full_rounds, tail = divmod(tiles, grid)
        return cls(full_rounds, tail, split, slice_steps(k, split, tile_k))

    def units(self, grid):
        """Work units in all: whole tiles, then tail slices."""
        return self.full_rounds * grid + self.tail * self.split

    def workspace_shape(self, tile_m, tile_n):
        """The f32 workspace of the tail's partial tiles: slice s of tail tile t at rows (s * tail + t) * tile_m."""
        return self.split * self.tail * tile_m, tile_n


def check_stream_k(stream_k, tiles, grid, k, tile_k, cluster, swap_ab, split_k, batch, fused, block_scales):
    """Raises ValueError unless `build`'s parameters make a stream-K tail kernel: C's own tiles of one GEMM in
    blocks of their own, a last round the grid leaves partly idle, and K steps for every slice."""
    if cluster > 1 or swap_ab or split_k > 1 or batch is not None or fused is not None or block_scales is not None:
        raise ValueError(f"stream_k={stream_k} splits C's own tiles of one GEMM among single blocks: build it without "
                         f"clusters, swap_ab, split_k, batch, a fused epilogue or block scales (got clusters of "
                         f"{cluster}, swap_ab={swap_ab}, split_k={split_k}, batch={batch}, fused="
                         f"{fused is not None}, block_scales={block_scales is not None})")
    if tiles % grid == 0:
        raise ValueError(f"stream_k={stream_k}: the {tiles} tiles make whole rounds of the {grid}-block grid, which "
                         "leave no SM idle; use stream_k=1")
    if stream_k not in splits_that_fit(k, tile_k, stream_k):
        raise ValueError(f"stream_k={stream_k} cuts K={k} into slices of which the last would be empty; use a "
                         "stream_k >= 1 that leaves every slice work (splits_that_fit)")


def check_last_slice(split_k, cluster):
    """Raises ValueError unless `build`'s parameters let the last K slice of each tile sum the partials: a split,
    and tiles of single blocks (a tile's counter is counted by its slices' consumers)."""
    if split_k < 2 or cluster > 1:
        raise ValueError(f"split_reduction='last_slice' sums the K slices of a split in the kernel: build it with "
                         f"split_k >= 2 and no clusters (got split_k={split_k}, clusters of {cluster})")


def check_clusters(cluster_m, cluster_n, n_tiles, block_scales):
    """Raises ValueError unless the cluster shape is one `build` makes: blocks along M sharing B (cluster_m) or
    along N sharing A (cluster_n), not both; along N with block scales, whole clusters of N tiles (a block past N
    would read B's scales past their end)."""
    if cluster_m < 1 or cluster_n < 1 or min(cluster_m, cluster_n) > 1:
        raise ValueError(f"clusters run along M (cluster_m > 1, sharing B) or along N (cluster_n > 1, sharing A), "
                         f"not both; got cluster_m={cluster_m}, cluster_n={cluster_n}")
    if cluster_n > 1 and block_scales is not None and n_tiles % cluster_n:
        raise ValueError(f"cluster_n={cluster_n} with block scales needs whole clusters of the {n_tiles} N tiles "
                         f"(a block past N would read B's scales past their end); use a cluster_n dividing "
                         f"{n_tiles} or cluster_m")


def promotion_partials(rows):
    """The partial accumulators of a block-scaled consumer holding `rows` rows of a tile: with one 64-row
    accumulator, PARTIALS it alternates between (step s sums into one while step s - 1's is promoted); with two
    (256-row tiles), one they share, each 64-row block's WGMMAs summing into it and promoted in turn while the
    other consumer's WGMMAs keep the tensor cores busy (DeepGEMM's 256 x 128 tiles). Either way a consumer holds
    three 64-row f32 accumulators: 192 registers a thread at tile_n=128."""
    return PARTIALS if rows == MMA_ROWS else 1


def check_block_scaled(dtype, k, tile_m, tile_n, tile_k, schedule, a_layout, b_layout, swap_ab, split_k, batch):
    """Raises ValueError unless `build`'s parameters make a block-scaled kernel: fp8 a [M, K] and b [N, K], one K
    step a scale block, an N tile within one of B's 128-row blocks (swapped: the tile's 128 rows are one block),
    cooperative tiles of BLOCK_SCALED_ROWS rows (a consumer's accumulators and `promotion_partials` fill its
    registers); split over K, slices of whole and equally many scale blocks (a slice past the last block would
    read scales that are not there)."""
    block = blockscaling.BLOCK
    if dtypes.itemsize(dtype) != 1 or (a_layout, b_layout) != ("mk", "nk"):
        raise ValueError(f"block scales take fp8 operands stored a [M, K] and b [N, K] (a_layout='mk', "
                         f"b_layout='nk'); got {dtypes.name(dtype)} with {a_layout!r}, {b_layout!r}")
    rows_legal = tile_m in (BLOCK_SCALED_ROWS[:1] if swap_ab else BLOCK_SCALED_ROWS)
    if not rows_legal or schedule != "cooperative" or tile_k != block or (block % tile_n and not swap_ab):
        raise ValueError(f"a block-scaled kernel runs cooperative tiles of {' or '.join(map(str, BLOCK_SCALED_ROWS))} "
                         f"rows (128 swapped: one of B's scale blocks; each consumer holds a promoted accumulator "
                         f"per 64 rows and its partials), tile_k={block} (one K step per scale block) and, unless "
                         f"swapped, a tile_n dividing {block} (one B scale per tile and K step); got tile_m={tile_m}, "
                         f"schedule={schedule!r}, tile_k={tile_k}, tile_n={tile_n}")
    if batch is not None:
        raise ValueError(f"a block-scaled kernel computes one GEMM: build it without batch (got batch={batch})")
    if blockscaling.blocks(k) % split_k:
        raise ValueError(f"split_k={split_k} does not cut K={k}'s {blockscaling.blocks(k)} scale blocks into equal "
                         "slices: a block-scaled kernel splits K into slices of as many whole blocks")


def default_tile_k(dtype):
    """The K tile of `dtype` operands where none is given: TILE_K_BYTES of K."""
    return TILE_K_BYTES // dtypes.itemsize(dtype)


def default_out_dtype(dtype):
    """The output type of a product of `dtype` operands: their own for 16-bit ones, bf16 for fp8 (as
    torch._scaled_mm's usual out_dtype)."""
    return dtypes.bfloat16 if dtypes.itemsize(dtype) == 1 else dtypes.as_dtype(dtype)


def mma_layouts(a_layout, b_layout, swap_ab):
    """(layout of the MMA's A, of its B) as stored: a's and b's, or b's and a's renamed when C^T = B^T A^T."""
    return (SWAPPED[b_layout], SWAPPED[a_layout]) if swap_ab else (a_layout, b_layout)


def consumer_rows(tile_m, schedule):
    """Output rows of a tile that one consumer computes: all of them (ping-pong) or half (cooperative)."""
    return tile_m if schedule == "pingpong" else tile_m // CONSUMERS


def store_slices(tile_n, epi_tile_n):
    """(first column, width) of the store slices of one accumulator's tile_n columns: epi_tile_n wide, the last
    narrower where epi_tile_n does not divide tile_n (a swapped 152-wide tile in 32-column slices ends with 24),
    so that a width of an odd number of WGMMA's 8-column steps need not be stored 8 columns at a time."""
    return [(first, min(epi_tile_n, tile_n - first)) for first in range(0, tile_n, epi_tile_n)]


def store_order(accumulators, slices, epi_tile_n, by_column):
    """(accumulator, store slice, buffer) of each store of a tile, in order: accumulator by accumulator or,
    `by_column` (where a fused epilogue reads tensors), column slice by column slice, so that the accumulators of
    one slice share the per-column tiles read for it (epilogue.TileReads). The buffer is 0 or 1 (of out_smem) for a
    full slice, alternating store by store, or None for a narrower last slice (narrow_out_smem, one buffer), which
    by column comes first for the first accumulator and last for the others: no two stores in a row write one
    buffer."""
    if by_column:
        full = [j for j, (_, width) in enumerate(slices) if width == epi_tile_n]
        order = [(i, j) for j in full for i in range(accumulators)]
        narrow = [j for j, (_, width) in enumerate(slices) if width != epi_tile_n]
        if narrow:
            order = [(0, narrow[0])] + order + [(i, narrow[0]) for i in range(1, accumulators)]
    else:
        order = [(i, j) for i in range(accumulators) for j in range(len(slices))]
    return [(i, j, s % 2 if slices[j][1] == epi_tile_n else None) for s, (i, j) in enumerate(order)]


def stmatrix_transposes(out_dtype):
    """True where a swapped tile's slices go into SMEM by stmatrix.trans (16-bit C): 8 of the accumulator's rows,
    16 bytes, a matrix row into a swizzled buffer; f32 C goes an element at a time into a plain one. 16-bit
    elements stored one at a time were 4-way bank-conflicted (152 stores a thread for a 256x152 tile): 3-5% of
    5000 x 1000 x 3000's time (RESULTS.md runs 140-141)."""
    return dtypes.itemsize(dtypes.as_dtype(out_dtype)) == STMATRIX_ELEMENT_BYTES


def store_transposed(window, part):
    """Stores swapped accumulator slice `part` into `window`, a transposed view of C's rows (`stmatrix_transposes`)."""
    if stmatrix_transposes(part.dtype):
        tg.stmatrix(window, part)
    else:
        window[...] = part


def slice_steps(k, split, tile_k):
    """K steps of tile_k in each of `split` K slices (the last may hold fewer: TMA reads zeros past K)."""
    return tg.cdiv(tg.cdiv(k, split), tile_k)


def splits_that_fit(k, tile_k, most):
    """The split_k values up to `most` for which every K slice of `build` has work."""
    steps = -(-k // tile_k)
    return [s for s in range(1, most + 1) if (s - 1) * -(-steps // s) < steps]


def last_slice_scratch(split_k, tiles, tile_m, tile_n, schedule):
    """(workspace, counters): the specs of the arrays a `tiles`-tile split summed by its last slices takes after
    every other and updates in place: the f32 partials (slice s of tile t at rows (s * tiles + t) * tile_m) and an
    int32 counter per tile and consumer summing its rows (both consumers of a cooperative tile, one of a ping-pong
    tile), zeroed once and left at 0 by every launch (tilegemm.runtime.counters keeps them per stream)."""
    return (tg.ShapeDtype((split_k * tiles * tile_m, tile_n), tg.float32),
            tg.ShapeDtype((tiles * (1 if schedule == "pingpong" else CONSUMERS),), tg.int32))


def workspace_rows(m, m_tile):
    """Rows of one K slice's partial C in a split-K workspace: M rounded up to whole tiles of the GEMM (whose
    stores write whole tiles) and of the 64-row reduction, so no slice writes into the next."""
    return -(-m // math.lcm(m_tile, MMA_ROWS)) * math.lcm(m_tile, MMA_ROWS)


def mma_view(tile, layout, which):
    """A stage tile as the MMA reads operand `which` (A (M, K), B (K, N)): transposed if `layout` stores it
    the other way round."""
    return tile if layout == MMA_ORDER[which] else tg.transpose_ref(tile, (1, 0))


def scratch_shapes(dtype, out_dtype, tile_m, tile_n, tile_k, stages, epi_tile_n, schedule, lhs_layout, rhs_layout,
                   swap_ab, batched=False, promoted=False, scale_slots=None, cluster_axis="cm", rhs_dtype=None):
    """The kernel's scratch: the A and B stage rings (as the MMA's operands are stored; B of `rhs_dtype` where
    given, else `dtype` as A), the epilogue buffers, the pipeline barriers and the consumers' accumulators.
    `batched`: every tile buffer has a leading dimension of 1, the batch entry of the 3-D TMA box it is copied from
    or to. `promoted`: each accumulator has a `partial` one that a K block's WGMMAs sum into (block scaling).
    `scale_slots`: the shapes of a stage's staged scale_a and scale_b (BlockScales.staged_slots), rings of them
    beside the A and B stages. `cluster_axis`: the cluster axis whose blocks all release each stage."""
    one = (1,) if batched else ()
    rhs_dtype = rhs_dtype or dtype
    pingpong = schedule == "pingpong"
    rows = consumer_rows(tile_m, schedule)
    def out_buffer(lead, width):
        """SMEM for store slices `width` columns wide: C's own, swizzled; a swapped accumulator slice (64 of N x
        width of M) transposed into C's rows (`store_transposed`), swizzled where stmatrix writes it."""
        if swap_ab:
            transforms = tg.mma_transforms(MMA_ROWS, out_dtype) if stmatrix_transposes(out_dtype) else ()
            return tg.SMEM((*lead, *one, width, MMA_ROWS), out_dtype, transforms=transforms)
        return tg.SMEM((*lead, *one, MMA_ROWS, width), out_dtype, transforms=tg.mma_transforms(width, out_dtype))
    scratch = dict(
        a_smem=tg.SMEM((stages, *one, *stored(lhs_layout, tile_m, tile_k)), dtype,
                       transforms=tg.mma_transforms(stored(lhs_layout, tile_m, tile_k)[1], dtype)),
        b_smem=tg.SMEM((stages, *one, *stored(rhs_layout, tile_n, tile_k)), rhs_dtype,
                       transforms=tg.mma_transforms(stored(rhs_layout, tile_n, tile_k)[1], rhs_dtype)),
        out_smem=out_buffer((CONSUMERS, 2), epi_tile_n),
        **({"narrow_out_smem": out_buffer((CONSUMERS,), tile_n % epi_tile_n)}   # a narrower last store slice's
           if tile_n % epi_tile_n else {}),
        full=tg.Barrier(num_arrivals=2 if scale_slots is None else 4,            # A and B (and the stage's
                        num_barriers=stages),                                    # scales) landed in a stage
        empty=tg.ClusterBarrier(collective_axes=cluster_axis, num_barriers=stages,       # every consumer that read the
                                num_arrivals=1 if pingpong else CONSUMERS),      # stage, in every block, is done
        **{f"acc{i}": tg.ACC((MMA_ROWS, tile_n), tg.float32) for i in range(rows // MMA_ROWS)},
        **{f"partial{p}_0": tg.ACC((MMA_ROWS, tile_n), tg.float32)   # one 64-row partial per step parity
           for p in range(promotion_partials(rows) if promoted else 0)},
    )
    if scale_slots is not None:
        a_slot, b_slot = scale_slots
        scratch.update(scale_a_smem=tg.SMEM((stages, *a_slot), tg.float32),
                       scale_b_smem=tg.SMEM((stages, *b_slot), tg.float32))
    if pingpong:
        scratch["turn"] = tg.Barrier(num_arrivals=1, num_barriers=CONSUMERS)   # consumer i may start its main loop
    return scratch


def deepest_stages(dtype=tg.float16, tile_m=128, tile_n=192, tile_k=None, epi_tile_n=64, schedule="pingpong",
                   a_layout="mk", b_layout="kn", swap_ab=False, split_k=1, most=MAX_STAGES, promoted=False,
                   scale_slots=None):
    """The most stages (up to `most`) whose scratch fits in a block's shared memory, for `build`'s parameters
    (`promoted`, `scale_slots`: a block-scaled kernel's, as scratch_shapes): a memory-bound design keeps that many
    loads in flight."""
    lhs_layout, rhs_layout = mma_layouts(a_layout, b_layout, swap_ab)
    tile_k = default_tile_k(dtype) if tile_k is None else tile_k
    out_dtype = tg.float32 if split_k > 1 else default_out_dtype(dtype)
    return min(most, tg.max_stages(lambda s: scratch_shapes(dtype, out_dtype, tile_m, tile_n, tile_k, s, epi_tile_n,
                                                            schedule, lhs_layout, rhs_layout, swap_ab,
                                                            promoted=promoted, scale_slots=scale_slots)))


def build(m, n, k, dtype=tg.float16, tile_m=128, tile_n=192, tile_k=None, stages=4, epi_tile_n=64, cluster_m=1,
          cluster_n=1, grid_minor_dim=0, grid_tile_width=8, num_sms=132, schedule="pingpong", a_layout="mk",
          b_layout="kn", swap_ab=False, split_k=1, batch=None, stream_k=1, split_reduction="second_pass", *,
          fused=None, block_scales=None, dependent_launch=True, trigger_dependents=False, l2_promotion=None,
          b_dtype=None):
    """c[m, n] = A @ B with f32 accumulation, as a persistent warp-specialized kernel.

    The kernel takes a and b as stored, row-major: a is A [m, k] (a_layout="mk") or A.T
    [k, m] ("km"), b is B [k, n] (b_layout="kn") or B.T [n, k] ("nk"); both of `dtype`, or b of `b_dtype` where
    the tensor cores take the two together (fp8: e4m3 by e5m2 or the other way round); c is [m, n] of
    default_out_dtype(dtype). tile_k None: default_tile_k.
    With `swap_ab` the tiles are of C^T: tile_m rows of N, tile_n columns of M. With
    `split_k` > 1 the output is the f32 workspace [split_k * workspace_rows(m, ...), n]
    of partial products that `splitk_reduce.build` sums into c; with split_reduction="last_slice" the kernel
    sums them itself: it takes its f32 workspace and int32 counters after every other array
    (`last_slice_scratch`) and returns (c, the workspace, the counters), the last two updated in place. With
    `batch`, a, b and c lead with a batch dimension of that size (c[i] = A[i] @ B[i]), read and written with 3-D
    TMA boxes one entry deep.
    With `stream_k` > 1 the kernel returns (c, workspace): c holds every tile but those of the last, partial
    round, whose S partial products are in the f32 workspace (`StreamKTail`) for `splitk_reduce.build_tail`.
    With `fused` (a tilegemm.ops.epilogue.Fused), c = fused.fn(A @ B, **tensors) in its output dtype, and the
    kernel takes the epilogue's tensors after a and b (not with batch, nor with split_k unless summed in the
    kernel; with swap_ab, fn runs on C^T's tiles with its tensors transposed: elementwise epilogues of vectors and
    single values only, `epilogue.apply`).
    With `block_scales` (a tilegemm.ops.blockscaling.BlockScales), fp8 a [m, k] and b [n, k] are block-scaled:
    the kernel takes scale_a and scale_b (as `block_scales` stores them; none for blockscaling.UNIT, promotion
    alone) after b, before any epilogue tensors,
    and promotes every K block (cooperative 128- or 256-row tiles, tile_k=128, tile_n dividing 128; split over K in
    slices of as many whole blocks, each slice's promoted partial into the workspace); the producer copies each
    step's scales into SMEM beside A and B where TMA can (BlockScales.staged_slots: rows of whole 16-byte units, as
    given or padded), else the consumers read them from GMEM. Swapped, the tiles are C^T's (128 rows of N, one of
    B's scale blocks; tile_n columns of M of any width) and the consumers read the scales from GMEM.
    `dependent_launch` (tg.kernel's): a call's blocks set up while the previous kernel on the stream finishes
    (1-5% faster decode calls, RESULTS.md run 167). `trigger_dependents`: each block lets the next kernel launch
    once its producer has issued its last load (tg.launch_dependents), so that the next call's blocks set up on the
    SMs this call's first blocks to finish free (tg.matmul's choice for the designs the model finds SM-bound).
    `l2_promotion` (64, 128 or 256): the loads of a and b ask L2 to fetch that many bytes a miss
    (tg.copy_gmem_to_smem's, which says where it was measured faster; DeepGEMM's 256, with A multicast to pairs
    along N). No pick of tg.matmul's takes it; tg.tune_matmul tries it on 256-row block-scaled tiles.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    check_layouts(a_layout, b_layout)
    dtype = dtypes.as_dtype(dtype)
    b_dtype = dtype if b_dtype is None else dtypes.as_dtype(b_dtype)
    if not WGMMA.takes(dtype, b_dtype):
        raise ValueError(f"a of {dtypes.name(dtype)} and b of {dtypes.name(b_dtype)}: WGMMA takes A and B "
                         f"{WGMMA.pairs_in_words()}")
    tile_k = default_tile_k(dtype) if tile_k is None else tile_k
    pingpong = schedule == "pingpong"
    if (tile_m, schedule) not in TILE_ROWS:
        legal = ", ".join(f"{rows} with schedule={s!r} ({consumer_rows(rows, s)} rows per consumer)"
                          for rows, s in sorted(TILE_ROWS))
        raise ValueError(f"tile_m must be one of: {legal}; got tile_m={tile_m} with schedule={schedule!r}")
    rows = consumer_rows(tile_m, schedule)
    acc_registers = rows * tile_n // WARPGROUP_THREADS
    if acc_registers > MAX_ACC_REGISTERS:
        raise ValueError(f"a {schedule} consumer keeps its {rows} x {tile_n} f32 rows of the {tile_m} x {tile_n} tile "
                         f"in registers: it needs {acc_registers} registers per thread for them alone (at most "
                         f"{MAX_ACC_REGISTERS}); use tile_n <= {MAX_ACC_REGISTERS * WARPGROUP_THREADS // rows}"
                         + (" or schedule='cooperative' (half the rows per consumer)" if pingpong else ""))
    if epi_tile_n > tile_n:
        raise ValueError(f"epi_tile_n={epi_tile_n} is wider than tile_n={tile_n}: the epilogue stores slices of a "
                         "tile (the last one narrower where epi_tile_n does not divide tile_n)")
    if split_reduction not in SPLIT_REDUCTIONS:
        raise ValueError(f"split_reduction must be one of {SPLIT_REDUCTIONS}, got {split_reduction!r}")
    in_kernel = split_reduction == "last_slice"   # the last K slice of each tile sums the partials
    cluster = max(cluster_m, cluster_n)   # blocks of a cluster, along M or along N
    cluster_axis = "cn" if cluster_n > 1 else "cm"
    if in_kernel:
        check_last_slice(split_k, cluster)
    if fused is not None and ((split_k > 1 and not in_kernel) or batch is not None):
        raise ValueError("a fused epilogue runs on C's tiles as the flagship stores them: build it without split_k "
                         f"and batch (got split_k={split_k}, batch={batch}; a split design runs it where the slices "
                         "are summed: split_reduction='last_slice', or tilegemm.ops.splitk_reduce's pass)")
    if fused is not None and swap_ab and not fused_epilogue.transposable(fused, m, n):
        raise ValueError("a swap-AB kernel runs a fused epilogue on C^T's tiles, reading each of its tensors "
                         "transposed: vectors and single values only, not the [M, N] ones "
                         f"({', '.join(fused_epilogue.full_tensors(fused, m, n))}); build it without swap_ab")
    if block_scales is not None:
        check_block_scaled(dtype, k, tile_m, tile_n, tile_k, schedule, a_layout, b_layout, swap_ab, split_k, batch)
    mma_m, mma_n = (n, m) if swap_ab else (m, n)            # the MMA's problem: C^T = B^T A^T when swapped
    lhs_layout, rhs_layout = mma_layouts(a_layout, b_layout, swap_ab)
    k_steps = slice_steps(k, split_k, tile_k)          # K steps of one K slice
    if split_k not in splits_that_fit(k, tile_k, split_k):
        raise ValueError(f"split_k={split_k} cuts K={k} into slices of {k_steps} steps of {tile_k}: the last slice "
                         f"would be empty; use a split_k >= 1 that leaves every slice work (splits_that_fit)")
    if batch is not None and split_k > 1:
        raise ValueError(f"split_k={split_k} with batch={batch}: a batched split-K kernel is not built (its "
                         "workspace and reduction are per GEMM); use split_k=1 with a batch")
    m_tiles, n_tiles = tg.cdiv(mma_m, tile_m), tg.cdiv(mma_n, tile_n)
    check_clusters(cluster_m, cluster_n, n_tiles, block_scales)
    m_groups = tg.cdiv(m_tiles, cluster_m)  # a cluster computes cluster_m vertically adjacent tiles
    n_groups = tg.cdiv(n_tiles, cluster_n)  # ... or cluster_n horizontally adjacent ones
    tiles_per_slice = m_groups * n_groups
    units = tiles_per_slice * split_k * (batch or 1)   # (tile, K slice or batch entry) pairs
    tail = None
    if stream_k > 1:
        check_stream_k(stream_k, tiles_per_slice, num_sms, k, tile_k, cluster, swap_ab, split_k, batch, fused,
                       block_scales)
        tail = StreamKTail.of(tiles_per_slice, num_sms, k, tile_k, stream_k)
        units = tail.units(num_sms)
    num_clusters = min(num_sms // cluster, units)
    a_multicast = ("cn",) if cluster_n > 1 else ()  # the cluster axis A tiles are multicast along
    b_multicast = ("cm",) if cluster_m > 1 else ()  # ... and B tiles
    if split_k > 1 and not in_kernel:   # partial tiles, slice after slice, each `slice_rows` rows of C (M) apart
        slice_rows = workspace_rows(m, tile_n if swap_ab else tile_m)
        out_dtype, out_shape = tg.float32, (split_k * slice_rows, n)
    else:
        slice_rows, out_shape = 0, (m, n)
        out_dtype = default_out_dtype(dtype)
    if fused is not None:
        out_dtype = dtypes.as_dtype(fused.out_dtype)
        if not swap_ab:   # an output slice's swizzled SMEM rows keep their bytes (a swapped slice's are plain)
            epi_tile_n = epi_tile_n * default_out_dtype(dtype).itemsize // out_dtype.itemsize
    slices = store_slices(tile_n, epi_tile_n)       # (first column, width) of each store slice of an accumulator
    batched = batch is not None
    lead = (batch,) if batched else ()
    scale_slots = block_scales.staged_slots(m, n, k, tile_m) if block_scales is not None and not swap_ab else None
    staged = scale_slots is not None   # the scales are copied into SMEM beside A and B
    lhs_dtype, rhs_dtype = (b_dtype, dtype) if swap_ab else (dtype, b_dtype)   # the MMA's A and B
    scratch = scratch_shapes(lhs_dtype, out_dtype, tile_m, tile_n, tile_k, stages, epi_tile_n, schedule, lhs_layout,
                             rhs_layout, swap_ab, batched, promoted=block_scales is not None, scale_slots=scale_slots,
                             cluster_axis=cluster_axis, rhs_dtype=rhs_dtype)
    operands = [tg.ShapeDtype(lead + spec.shape, spec.dtype)   # a and b as stored
                for spec in operand_specs(m, n, k, dtype, a_layout, b_layout, b_dtype)]
    scale_specs = block_scales.specs(m, n, k) if block_scales is not None else ()
    out_specs = tg.ShapeDtype(lead + out_shape, out_dtype)
    if tail is not None:
        out_specs = (out_specs, tg.ShapeDtype(tail.workspace_shape(tile_m, tile_n), tg.float32))
    carried, aliases = (), None   # the last slices' workspace and counters: inputs updated in place
    parts = 1 if pingpong else CONSUMERS   # consumers sharing a tile: each sums its own rows' partials
    if in_kernel:
        carried = last_slice_scratch(split_k, tiles_per_slice, tile_m, tile_n, schedule)
        out_specs = (out_specs, *carried)
        first = len(operands) + len(scale_specs) + len(fused.specs if fused is not None else ())
        aliases = {first: 1, first + 1: 2}
    partial_tiles = tail.tail if tail is not None else tiles_per_slice   # tiles of a slice in the workspace

    def entry(bi, *selection):
        """A GMEM selection of batch entry `bi` (a one-deep TMA box), or the selection itself unbatched."""
        return (tg.ds(bi, 1), *selection) if batched else selection

    def tile_of(ring, slot):
        """Stage `slot` of an operand ring as the MMA reads it (its batch entry dimension indexed away)."""
        return ring.at[slot, 0] if batched else ring.at[slot]

    def scale_block(n_idx):
        """B's 128-row scale block that N tile `n_idx` lies in."""
        return n_idx // (blockscaling.BLOCK // tile_n)

    def in_slice(k_slice, row):
        """Row `row` of C within split-K slice `k_slice`'s rows of the workspace; C's own row without split-K (None),
        so the graph stays the single-slice kernel's."""
        return row if k_slice is None else k_slice * slice_rows + row

    @kernel(in_specs=operands + list(scale_specs) + list(fused.specs if fused is not None else ()) + list(carried),
            out_shape=out_specs, input_output_aliases=aliases, grid=(num_clusters,), grid_names=("cluster",),
            cluster=(cluster,), cluster_names=(cluster_axis,), num_threads=CONSUMERS + 1, thread_name="wg",
            scratch_shapes=scratch, name="hopper_flagship", dependent_launch=dependent_launch)
    def matmul(a, b, *operands, a_smem, b_smem, out_smem, full, empty, turn=None, scale_a_smem=None,
               scale_b_smem=None, narrow_out_smem=None, **accumulators):
        scale_a, scale_b = operands[:len(scale_specs)] or (None, None)
        outputs = 3 if in_kernel else 2 if tail is not None else 1
        first_output = len(operands) - outputs
        epilogue_tensors = operands[len(scale_specs):first_output - len(carried)]
        c, workspace, counters = (*operands[first_output:], None, None)[:3]   # c, then any workspace and counters
        names = ["scale_a", "scale_b"][:len(scale_specs)]
        names += [name for name, _, _ in fused.tensors] if fused is not None else []
        names += ["workspace_in", "counters_in"][:len(carried)] + ["c", "workspace", "counters"][:outputs]
        for ref, name in zip(operands, names):   # what the generated code calls them (the body's signature
            ref.name_hint = name                  # names only a and b)
        wg = tg.axis_index("wg")
        accs = [acc for name, acc in accumulators.items() if name.startswith("acc")]
        partials = [[acc for name, acc in accumulators.items() if name.startswith(f"partial{p}_")]
                    for p in range(PARTIALS)]   # the partial accumulators of K steps 0, 2, ... and of 1, 3, ...
        #                                         (a 256-row tile's consumers: one, partials[0][0])
        registers = REGISTERS[schedule] if block_scales is None else PROMOTED_REGISTERS
        lhs, rhs = (b, a) if swap_ab else (a, b)    # the MMA's A and B operands, as stored

        def tiles(body, consumer=None):
            """Runs body(m_idx, n_idx, unit) for each work unit of this block (of `consumer` if given): an output
            tile of the MMA's problem and the Unit saying which K steps it sums."""
            @tg.nd_loop((units,), collective_axes="cluster")
            def _(info):
                (lin,) = info.index

                def visit(tile, unit):
                    m_group, n_group = tg.planar_snake(tile, (m_groups, n_groups), grid_minor_dim, grid_tile_width)
                    if cluster_n > 1:
                        body(m_group, n_group * cluster_n + tg.axis_index("cn"), unit)
                    else:
                        body(m_group * cluster_m + tg.axis_index("cm"), n_group, unit)

                def visit_unit():
                    tile, outer = (lin, 0) if units == tiles_per_slice else (lin % tiles_per_slice,
                                                                              lin // tiles_per_slice)
                    k_slice, bi = (None, outer) if batched else (outer if split_k > 1 else None, 0)
                    visit(tile, Unit(k_slice, bi, info.local_index * k_steps, k_steps, tile if in_kernel else None))

                def visit_stream_k():
                    """A whole tile in the full rounds (every block's first `full_rounds` units), else a K slice of
                    a tail tile."""
                    whole = tail.full_rounds * num_clusters
                    if whole:
                        tg.when(lin < whole)(lambda: visit(lin, Unit(None, 0, info.local_index * k_steps, k_steps)))

                    @tg.when(lin >= whole)
                    def _():
                        index, k_slice = (lin - whole) % tail.tail, (lin - whole) // tail.tail
                        first = tail.full_rounds * k_steps + (info.local_index - tail.full_rounds) * tail.k_steps
                        visit(whole + index, Unit(k_slice, 0, first, tail.k_steps, index))
                visit_units = visit_unit if tail is None else visit_stream_k
                if consumer is None:
                    visit_units()
                else:
                    tg.when(info.local_index % CONSUMERS == consumer)(visit_units)

        @tg.when(wg == PRODUCER)
        def _producer():
            tg.set_max_registers(registers[0], action="decrease")

            def load_tile(m_idx, n_idx, unit):
                bi = unit.batch_entry

                def load_step(ki, _):
                    step = unit.first_step + ki
                    slot = step % stages

                    @tg.when(step >= stages)
                    def _():
                        tg.barrier_wait(empty.at[slot])        # every consumer of the cluster released it
                    ks = tg.ds(unit.k_step(ki) * tile_k, tile_k)
                    tg.copy_gmem_to_smem(lhs.at[entry(bi, *stored(lhs_layout, tg.ds(m_idx * tile_m, tile_m), ks))],
                                         a_smem.at[slot], full.at[slot], collective_axes=a_multicast,
                                         l2_promotion=l2_promotion)
                    tg.copy_gmem_to_smem(rhs.at[entry(bi, *stored(rhs_layout, tg.ds(n_idx * tile_n, tile_n), ks))],
                                         b_smem.at[slot], full.at[slot], collective_axes=b_multicast,
                                         l2_promotion=l2_promotion)
                    if staged:
                        a_box, b_box = block_scales.staged_views(scale_a, scale_b, tg.ds(m_idx * tile_m, tile_m),
                                                                 scale_block(n_idx), unit.k_step(ki))
                        tg.copy_gmem_to_smem(a_box, scale_a_smem.at[slot], full.at[slot])
                        tg.copy_gmem_to_smem(b_box, scale_b_smem.at[slot], full.at[slot])
                tg.fori_loop(0, unit.k_steps, load_step, None)

            @tg.core_map(tg.WarpMesh("warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)   # one warp issues every copy; the other three sleep
                def _():
                    tiles(load_tile)
                    if trigger_dependents:
                        tg.launch_dependents()   # every load of this block is issued

        @tg.when(wg < CONSUMERS)
        def _consumer():
            tg.set_max_registers(registers[1], action="increase")
            row_base = 0 if pingpong else wg * rows    # this consumer's first row within a block tile

            def compute_tile(m_idx, n_idx, unit):
                first_step, bi = unit.first_step, unit.batch_entry
                reads = fused_epilogue.TileReads(fused, epilogue_tensors, m, n) if fused is not None else None
                first_inputs = epilogue_inputs(m_idx, n_idx, reads, 0)   # read before the main loop, so that
                #                                                          their GMEM latency passes while it runs
                if pingpong:
                    @tg.when(first_step > 0)
                    def _():
                        tg.barrier_wait(turn.at[wg])   # the other consumer has waited for all its stages
                for acc in accs:
                    acc[...] = tg.zeros((MMA_ROWS, tile_n), tg.float32)

                def landed(step):
                    """Waits until the stage of this block's K step `step` has landed; returns its slot."""
                    slot = step % stages
                    # Explicit parity: a ping-pong consumer skips the other's phases of `full`.
                    tg.barrier_wait(full.at[slot], phase=(step // stages) % 2)
                    return slot

                def issue(slot, targets, accumulate=True, first=0):
                    """The WGMMAs of stage `slot` into `targets`, one accumulator per 64 rows from the consumer's
                    64-row block `first` on (`accumulate` False: overwriting them)."""
                    for i, acc in enumerate(targets, first):   # of an "km" A tile, these rows are 64 stored columns
                        a_rows = mma_view(tile_of(a_smem, slot), lhs_layout, "A").at[tg.ds(row_base + i * MMA_ROWS,
                                                                                            MMA_ROWS)]
                        tg.wgmma(acc, a_rows, mma_view(tile_of(b_smem, slot), rhs_layout, "B"), accumulate=accumulate)

                def mma_step(ki, _):
                    step = first_step + ki
                    issue(landed(step), accs)
                    tg.wgmma_wait(1)                          # the previous step's MMAs are done ...

                    @tg.when(ki > 0)
                    def _():
                        tg.barrier_arrive(empty.at[(step - 1) % stages])   # ... so release its stage

                def step_scales(ki):
                    """The scales of the unit's K step `ki` (K block unit.k_step(ki)): the tile's scale_b, then per
                    accumulator the (64, 1) array of its rows' scale_a, or swapped the (1, tile_n) array of its
                    columns' (multiplied where they are used, so that nothing waits on the reads before then).
                    Staged: read from the step's stage, which must not have been released yet; else read from GMEM
                    (`reads_ahead` steps before the step's promotion needs them)."""
                    kb = unit.k_step(ki)
                    if swap_ab:   # C^T's tile: its rows one of B's scale blocks, A's scales along its columns
                        columns = block_scales.column_scales(scale_a, tg.ds(n_idx * tile_n, tile_n), kb)
                        return (block_scales.block_scale(scale_b, m_idx, kb), *(columns for _ in accs))
                    row0 = row_base if staged else m_idx * tile_m + row_base
                    rows = [tg.ds(row0 + i * MMA_ROWS, MMA_ROWS) for i in range(len(accs))]
                    if staged:
                        slot = (first_step + ki) % stages
                        return (block_scales.staged_block_scale(scale_b_smem.at[slot], scale_block(n_idx), kb),
                                *(block_scales.staged_row_scales(scale_a_smem.at[slot], r, kb) for r in rows))
                    b_scale = block_scales.block_scale(scale_b, scale_block(n_idx), kb)
                    return (b_scale, *(block_scales.row_scales(scale_a, r, kb) for r in rows))

                at_use = staged or not scale_specs   # scales read as their step is promoted (none: UnitScales)
                reads_ahead = 0 if at_use else SCALES_AHEAD   # K steps a scale read precedes its promotion

                def promoted_step(ki, ahead, parity, read=True):
                    """K step `ki` (>= 1) of a block-scaled tile: issues its WGMMAs into partials[parity]
                    (overwritten), waits for step ki - 1's, releases that step's stage and adds its partials times
                    its scales into the tile's accumulators while step ki's WGMMAs run. `ahead` holds the scales
                    read for the steps from ki - 1 on; with `read`, step ki - 1 + reads_ahead's are read now,
                    before the stage of step ki - 1 is released (GMEM reads a step ahead stalled the H200:
                    benchmarks/RESULTS.md run 64). Past the last step the first's are read again, unused: every
                    read stays inside the scale arrays."""
                    upcoming = (step_scales((ki - 1 + reads_ahead) % k_steps),) if read else ()
                    issue(landed(first_step + ki), partials[parity], accumulate=False)   # sums start from zero
                    tg.wgmma_wait(len(partials[parity]))               # step ki - 1's MMAs are done
                    tg.barrier_arrive(empty.at[(first_step + ki - 1) % stages])
                    ahead = (*ahead, *upcoming)
                    promote(partials[(parity - 1) % PARTIALS], ahead[0])
                    return ahead[1:]

                def promote(step_partials, scales):
                    """acc += partial * scale_a * scale_b for each accumulator of this consumer."""
                    b_scale, *a_scales = scales
                    for acc, partial, a_scale in zip(accs, step_partials, a_scales):
                        blockscaling.promote(acc, partial, a_scale, b_scale)

                def promoted_steps():
                    """The K loop of a block-scaled tile: step s sums into partials[s % PARTIALS] while the consumer
                    promotes step s - 1's. The loop runs two steps an iteration (partials are named statically)
                    and waits for both at its end: ptxas serializes every WGMMA of a loop that carries one in
                    flight across iterations and reads accumulators, or that runs four such steps an iteration
                    (advisory C7514). Where the steps after step 0 are odd, the lone one runs before the loop; the
                    last step is promoted once its WGMMAs are done."""
                    pairs, lone = divmod(k_steps - 1, 2)
                    issue(landed(first_step), partials[0], accumulate=False)
                    if at_use:       # each step's scales read from its stage (or none), as it is promoted
                        ahead = ()
                    elif pairs == 0:   # no loop: every step's scales now
                        ahead = tuple(step_scales(ki) for ki in range(k_steps))
                    else:            # read ahead, carried by the loop
                        ahead = tuple(step_scales(ki % k_steps) for ki in range(SCALES_AHEAD))
                    if lone:
                        ahead = promoted_step(1, ahead, 1, read=at_use or pairs > 0)
                    first = 1 + lone   # the loop's first step

                    def pair(j, ahead):
                        for i in range(2):
                            ahead = promoted_step(first + 2 * j + i, ahead, (first + i) % PARTIALS)
                        tg.wgmma_wait(0)
                        return ahead
                    if pairs:
                        ahead = tg.fori_loop(0, pairs, pair, ahead)
                    tg.wgmma_wait(0)
                    last = ahead[0] if ahead else step_scales(k_steps - 1)   # read before its stage is released
                    tg.barrier_arrive(empty.at[(first_step + k_steps - 1) % stages])
                    promote(partials[(k_steps - 1) % PARTIALS], last)

                def shared_partial_steps():
                    """The K loop of a block-scaled consumer holding two 64-row accumulators (a 256-row tile): per
                    K step, each block's WGMMAs sum into the one partial, are waited for and promoted in turn; the
                    stage is released after the last block's, its scales read before (no WGMMA stays in flight
                    across steps: nothing for ptxas to serialize)."""
                    partial = partials[0][0]

                    def step(ki, _):
                        slot = landed(first_step + ki)
                        b_scale, *a_scales = step_scales(ki)
                        for i, (acc, a_scale) in enumerate(zip(accs, a_scales)):
                            issue(slot, [partial], accumulate=False, first=i)
                            tg.wgmma_wait(0)
                            if i == len(accs) - 1:
                                tg.barrier_arrive(empty.at[slot])
                            blockscaling.promote(acc, partial, a_scale, b_scale)
                    tg.fori_loop(0, k_steps, step, None)
                if block_scales is None:
                    tg.fori_loop(0, unit.k_steps, mma_step, None)
                elif promotion_partials(rows) == 1:
                    shared_partial_steps()
                else:
                    promoted_steps()
                if pingpong:
                    tg.barrier_arrive(turn.at[1 - wg])  # every stage of this tile has landed: the other may start
                if block_scales is None:
                    tg.wgmma_wait(0)
                    tg.barrier_arrive(empty.at[(first_step + unit.k_steps - 1) % stages])
                if unit.partial is None:
                    store_tile(m_idx, n_idx, unit, reads, first_inputs)
                    return
                if not in_kernel:
                    write_partial(unit)
                    return

                @tg.when(m_idx * tile_m + row_base < mma_m)
                def _():   # a consumer whose rows all lie past C's (decode's M in a 128-row tile) has nothing to sum
                    write_partial(unit)
                    counter = counters.at[unit.partial * parts + (0 if pingpong else wg)]

                    @tg.when(tg.count_arrival(counter, split_k))
                    def _():   # every slice's partial is written: sum them in slice order into C's own tile
                        for i, acc in enumerate(accs):
                            sum_slices(acc, workspace, lambda s: partial_rows(s, unit.partial, i), slice(None),
                                       split_k)
                        store_tile(m_idx, n_idx, unit._replace(k_slice=None), reads, first_inputs)

            def write_partial(unit):
                """This slice's partial tile into the workspace, straight from the registers."""
                for i, acc in enumerate(accs):
                    workspace.at[partial_rows(unit.k_slice, unit.partial, i), :][...] = acc[...]

            def partial_rows(k_slice, partial, i):
                """The workspace rows of accumulator `i`'s part of slice `k_slice`'s partial of tile `partial`."""
                return tg.ds((k_slice * partial_tiles + partial) * tile_m + row_base + i * MMA_ROWS, MMA_ROWS)

            stores = store_order(len(accs), slices, epi_tile_n, by_column=fused is not None and bool(fused.tensors))

            def corner(m_idx, n_idx, s):
                """(first row, first column) of C that store slice `s` of the tile at (m_idx, n_idx) covers."""
                i, j, _ = stores[s]
                return m_idx * tile_m + row_base + i * MMA_ROWS, n_idx * tile_n + slices[j][0]

            def epilogue_inputs(m_idx, n_idx, reads, s):
                """The fused epilogue's tensor tiles of store slice `s` of the tile at (m_idx, n_idx) (None without
                one or past the last), each read once through `reads` (`TileReads`): the first slice's before the
                tile's main loop, each next one's a slice ahead, so that their GMEM latency is not waited for."""
                if fused is None or s == len(stores):
                    return None
                row0, col0 = corner(m_idx, n_idx, s)
                i, j, _ = stores[s]
                width = slices[j][1]
                if swap_ab:   # the slice is C^T's: its rows are C's columns
                    return fused_epilogue.transposed_tiles(reads.tiles(tg.ds(col0, width), tg.ds(row0, MMA_ROWS),
                                                                       j, i))
                return reads.tiles(tg.ds(row0, MMA_ROWS), tg.ds(col0, width), i, j)

            def store_tile(m_idx, n_idx, unit, reads, inputs):
                """The epilogue: the accumulators (through any fused epilogue, its tensors read through `reads`,
                the first slice's `inputs` already read) into C's tile, or into the workspace rows of the unit's K
                slice (split-K summed by a second pass)."""
                bi = unit.batch_entry
                outs = {}   # each accumulator's tile, as its first slice is stored
                for s, (i, j, b) in enumerate(stores):             # static: unrolled at trace time
                    upcoming = epilogue_inputs(m_idx, n_idx, reads, s + 1)
                    row0, col0 = corner(m_idx, n_idx, s)
                    first, width = slices[j]
                    if i not in outs:
                        outs[i] = accs[i][...] if fused is not None else accs[i][...].astype(out_dtype)
                    # No buffer is written by two stores in a row (`store_order`): the previous store's reads the
                    # wait below may leave in flight; the previous tile's stores, which may have used any, waited
                    # for all of them.
                    buf = out_smem.at[wg, b] if b is not None else narrow_out_smem.at[wg]
                    tg.wait_smem_to_gmem(1 if s else 0, wait_read_only=True)
                    part = outs[i][:, first:first + width]
                    window = buf.at[0] if batched else buf
                    if swap_ab:   # rows of C^T are columns of C
                        if fused is not None:
                            part = fused_epilogue.apply(fused, part, inputs, transposed=True)
                        store_transposed(tg.transpose_ref(window, (1, 0)), part)
                        dst = c.at[entry(bi, tg.ds(in_slice(unit.k_slice, col0), width),
                                         tg.ds(row0, MMA_ROWS))]
                    else:
                        if fused is not None:
                            part = fused_epilogue.apply(fused, part, inputs)
                        window[...] = part
                        dst = c.at[entry(bi, tg.ds(in_slice(unit.k_slice, row0), MMA_ROWS),
                                         tg.ds(col0, width))]
                    tg.commit_smem()
                    tg.copy_smem_to_gmem(buf, dst)
                    inputs = upcoming
            tiles(compute_tile, consumer=wg if pingpong else None)
            tg.wait_smem_to_gmem(0)

    return matmul
