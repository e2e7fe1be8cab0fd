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
  stores) and stores them with TMA while writing the next.
* Two consumer schedules (`schedule=`):
  - "cooperative": both consumer warpgroups work on every tile, each on 64 of
    its 128 rows; they store the tile together while the producer prefetches.
  - "pingpong": each consumer owns whole tiles (two 64-row accumulators) and
    the two alternate; a `turn` barrier starts a consumer's main loop only once
    the other has waited for all of its stages, so one consumer's epilogue runs
    under the other's main loop. Its 2 x 64 x tile_n f32 accumulators must fit
    in 240 registers per thread: tile_n <= 192.
* Optional clusters (`cluster_m=2`): the blocks of a cluster compute vertically
  adjacent tiles sharing one B tile; each fetches half of it and TMA
  multicasts it to both, and the `empty` ClusterBarrier frees a stage only once
  every block's consumers released it. Measured no faster on the H200.

* fp8 operands (e4m3, e5m2) with scales (`scales`): the tensor cores read fp8
  only K-major, so A is stored [M, K] and B [N, K]; the kernel multiplies each
  64 x epi_tile_n slice of its f32 accumulators by A's scale (one per tensor, or
  one per row of A) and B's (one per tensor, or one per column of B), as
  torch._scaled_mm does, before converting it to the output type (`out_dtype`,
  bf16 by default for fp8 inputs).

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

The default configuration is the measured best at 8192^3 on the H200
(benchmarks/RESULTS.md, runs 7-10): 128x192 tiles (a 99.3% full last round,
against 97.0% for 128x256) with ping-pong consumers.
"""
from .. import lang as tg
from ..kernel import kernel
from ..lang import dtypes
from ..model.layouts import MMA_ORDER, check_layouts, operand_specs, stored

CONFIG = dict(tile_m=128, tile_n=192, tile_k=None, stages=4, epi_tile_n=64, cluster_m=1, grid_minor_dim=0,
              grid_tile_width=8, num_sms=132, schedule="pingpong", a_layout="mk", b_layout="kn")
SCHEDULES = ("cooperative", "pingpong")
CONSUMERS = 2
PRODUCER = 2  # warpgroup index of the TMA producer
MMA_ROWS = 64  # rows of one WGMMA accumulator (m64nNk16)
REGISTERS = {"cooperative": (40, 232), "pingpong": (24, 240)}  # (producer, consumer) setmaxnreg per schedule
MAX_PINGPONG_TILE_N = 192  # 2 x 64 x 192 f32 accumulators are 192 of a ping-pong consumer's 240 registers
TILE_K_BYTES = 128  # the default K tile: one 128-byte swizzle row (64 16-bit or 128 fp8 elements)
SCALES = ("tensor", "row")  # an operand's scale: one for the tensor, or one per row of A / column of B


def default_out_dtype(dtype):
    """The output type of a product of `dtype` operands: their own for 16-bit ones, bf16 for fp8 (as
    torch._scaled_mm's usual out_dtype)."""
    return dtypes.bfloat16 if dtypes.itemsize(dtype) == 1 else dtypes.as_dtype(dtype)


def scale_specs(m, n, scales):
    """The GMEM specs of (scale_a, scale_b) for `scales` (each in SCALES): f32 [1, 1] per tensor, [m, 1] per row
    of A, [1, n] per column of B."""
    kinds = dict(zip(("a", "b"), scales))
    for which, kind in kinds.items():
        if kind not in SCALES:
            raise ValueError(f"the scale of {which} must be one of {SCALES}, got {kind!r}")
    return (tg.ShapeDtype((m, 1) if kinds["a"] == "row" else (1, 1), tg.float32),
            tg.ShapeDtype((1, n) if kinds["b"] == "row" else (1, 1), tg.float32))


def scale_tile(scale, rows, cols):
    """The view of a [1, 1], [M, 1] or [1, N] scale that lines up with the output tile at (rows, cols); the
    accumulator slice it multiplies broadcasts it along its size-1 dimensions."""
    one = tg.ds(0, 1)
    return scale.at[rows if scale.shape[0] > 1 else one, cols if scale.shape[1] > 1 else one]


def mma_view(tile, layout, which):
    """A stage tile as the MMA reads operand `which` (A (M, K), B (K, N)): transposed if `layout` stores it
    the other way round."""
    return tile if layout == MMA_ORDER[which] else tg.transpose_ref(tile, (1, 0))


def build(m, n, k, dtype=tg.float16, tile_m=128, tile_n=192, tile_k=None, stages=4, epi_tile_n=64, cluster_m=1,
          grid_minor_dim=0, grid_tile_width=8, num_sms=132, schedule="pingpong", a_layout="mk", b_layout="kn",
          out_dtype=None, scales=None):
    """c[m, n] = A @ B with f32 accumulation, as a persistent warp-specialized kernel.

    The kernel takes a and b as stored, row-major: a is A [m, k] (a_layout="mk") or A.T
    [k, m] ("km"), b is B [k, n] (b_layout="kn") or B.T [n, k] ("nk"); c is [m, n] of
    `out_dtype` (default_out_dtype). tile_k None: TILE_K_BYTES of K. With `scales`
    (scale of A, scale of B, each in SCALES) it also takes scale_a and scale_b
    (scale_specs) after b and computes c = (A @ B) * scale_a * scale_b.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    check_layouts(a_layout, b_layout)
    if schedule == "pingpong" and tile_n > MAX_PINGPONG_TILE_N:
        raise ValueError(f"schedule='pingpong' keeps two 64 x tile_n f32 accumulators per consumer: tile_n={tile_n} "
                         f"needs {tile_n} registers per thread for them alone; use tile_n <= {MAX_PINGPONG_TILE_N} "
                         "or schedule='cooperative'")
    if tile_n % epi_tile_n:
        raise ValueError(f"epi_tile_n={epi_tile_n} must divide tile_n={tile_n}: the epilogue stores whole slices")
    dtype = dtypes.as_dtype(dtype)
    out_dtype = default_out_dtype(dtype) if out_dtype is None else dtypes.as_dtype(out_dtype)
    tile_k = TILE_K_BYTES // dtype.itemsize if tile_k is None else tile_k
    extra_specs = scale_specs(m, n, scales) if scales is not None else ()
    pingpong = schedule == "pingpong"
    rows = tile_m if pingpong else tile_m // CONSUMERS  # output rows of a tile that one consumer computes
    m_tiles, n_tiles, k_steps = tg.cdiv(m, tile_m), tg.cdiv(n, tile_n), tg.cdiv(k, tile_k)
    m_groups = tg.cdiv(m_tiles, cluster_m)  # a cluster computes cluster_m vertically adjacent tiles
    num_clusters = min(num_sms // cluster_m, m_groups * n_tiles)
    b_multicast = ("cm",) if cluster_m > 1 else ()  # the cluster axis B tiles are multicast along
    slices = tile_n // epi_tile_n                   # epilogue slices per 64-row accumulator

    scratch = dict(
        a_smem=tg.SMEM((stages, *stored(a_layout, tile_m, tile_k)), dtype,
                       transforms=tg.mma_transforms(stored(a_layout, tile_m, tile_k)[1], dtype)),
        b_smem=tg.SMEM((stages, *stored(b_layout, tile_n, tile_k)), dtype,
                       transforms=tg.mma_transforms(stored(b_layout, tile_n, tile_k)[1], dtype)),
        out_smem=tg.SMEM((CONSUMERS, 2, MMA_ROWS, epi_tile_n), out_dtype,
                         transforms=tg.mma_transforms(epi_tile_n, out_dtype)),
        full=tg.Barrier(num_arrivals=2, num_barriers=stages),                    # A and B landed in a stage
        empty=tg.ClusterBarrier(collective_axes="cm", num_barriers=stages,       # every consumer that read the
                                num_arrivals=1 if pingpong else CONSUMERS),      # stage, in every block, is done
        **{f"acc{i}": tg.ACC((MMA_ROWS, tile_n), tg.float32) for i in range(rows // MMA_ROWS)},
    )
    if pingpong:
        scratch["turn"] = tg.Barrier(num_arrivals=1, num_barriers=CONSUMERS)   # consumer i may start its main loop

    @kernel(in_specs=operand_specs(m, n, k, dtype, a_layout, b_layout) + extra_specs,
            out_shape=tg.ShapeDtype((m, n), out_dtype), grid=(num_clusters,), grid_names=("cluster",),
            cluster=(cluster_m,), cluster_names=("cm",), num_threads=CONSUMERS + 1, thread_name="wg",
            scratch_shapes=scratch, name="hopper_flagship")
    def matmul(a, b, *operands, a_smem, b_smem, out_smem, full, empty, turn=None, **accs):
        *scale_refs, c = operands   # scale_a and scale_b (with `scales`), then the output
        wg = tg.axis_index("wg")
        accs = list(accs.values())

        def tiles(body, consumer=None):
            """Runs body(m_idx, n_idx, first_step) for each output tile of this block (of `consumer` if given)."""
            @tg.nd_loop((m_groups * n_tiles,), collective_axes="cluster")
            def _(info):
                (lin,) = info.index

                def visit():
                    m_group, n_idx = tg.planar_snake(lin, (m_groups, n_tiles), grid_minor_dim, grid_tile_width)
                    body(m_group * cluster_m + tg.axis_index("cm"), n_idx, info.local_index * k_steps)
                if consumer is None:
                    visit()
                else:
                    tg.when(info.local_index % CONSUMERS == consumer)(visit)

        @tg.when(wg == PRODUCER)
        def _producer():
            tg.set_max_registers(REGISTERS[schedule][0], action="decrease")

            def load_tile(m_idx, n_idx, first_step):
                def load_step(ki, _):
                    step = first_step + ki
                    slot = step % stages

                    @tg.when(step >= stages)
                    def _():
                        tg.barrier_wait(empty.at[slot])        # every consumer of the cluster released it
                    ks = tg.ds(ki * tile_k, tile_k)
                    tg.copy_gmem_to_smem(a.at[stored(a_layout, tg.ds(m_idx * tile_m, tile_m), ks)], a_smem.at[slot],
                                         full.at[slot])
                    tg.copy_gmem_to_smem(b.at[stored(b_layout, tg.ds(n_idx * tile_n, tile_n), ks)], b_smem.at[slot],
                                         full.at[slot], collective_axes=b_multicast)
                tg.fori_loop(0, k_steps, load_step, None)

            @tg.core_map(tg.WarpMesh("warp"))
            def _():
                @tg.when(tg.axis_index("warp") == 0)   # one warp issues every copy; the other three sleep
                def _():
                    tiles(load_tile)

        @tg.when(wg < CONSUMERS)
        def _consumer():
            tg.set_max_registers(REGISTERS[schedule][1], action="increase")
            row_base = 0 if pingpong else wg * rows    # this consumer's first row within a block tile

            def compute_tile(m_idx, n_idx, first_step):
                if pingpong:
                    @tg.when(first_step > 0)
                    def _():
                        tg.barrier_wait(turn.at[wg])   # the other consumer has waited for all its stages
                for acc in accs:
                    acc[...] = tg.zeros((MMA_ROWS, tile_n), tg.float32)

                def mma_step(ki, _):
                    step = first_step + ki
                    slot = step % stages
                    # Explicit parity: a ping-pong consumer skips the other's phases of `full`.
                    tg.barrier_wait(full.at[slot], phase=(step // stages) % 2)
                    for i, acc in enumerate(accs):   # of an "km" A tile, these rows are 64 stored columns
                        a_rows = mma_view(a_smem.at[slot], a_layout, "A").at[tg.ds(row_base + i * MMA_ROWS, MMA_ROWS)]
                        tg.wgmma(acc, a_rows, mma_view(b_smem.at[slot], b_layout, "B"))
                    tg.wgmma_wait(1)                          # the previous step's MMAs are done ...

                    @tg.when(ki > 0)
                    def _():
                        tg.barrier_arrive(empty.at[(step - 1) % stages])   # ... so release its stage
                tg.fori_loop(0, k_steps, mma_step, None)
                if pingpong:
                    tg.barrier_arrive(turn.at[1 - wg])  # every stage of this tile has landed: the other may start
                tg.wgmma_wait(0)
                tg.barrier_arrive(empty.at[(first_step + k_steps - 1) % stages])

                for i, acc in enumerate(accs):
                    out = acc[...] if scale_refs else acc[...].astype(out_dtype)
                    row0 = m_idx * tile_m + row_base + i * MMA_ROWS
                    for j in range(slices):                        # static: unrolled at trace time
                        s = i * slices + j                         # buffers alternate within the tile; the
                        buf = out_smem.at[wg, s % 2]               # previous tile's stores, which may have
                        tg.wait_smem_to_gmem(1 if s else 0, wait_read_only=True)  # used either, had a main loop
                        rows = tg.ds(row0, MMA_ROWS)
                        cols = tg.ds(n_idx * tile_n + j * epi_tile_n, epi_tile_n)
                        part = out[:, j * epi_tile_n:(j + 1) * epi_tile_n]
                        for scale in scale_refs:
                            part = part * scale_tile(scale, rows, cols)[...]
                        buf[...] = part.astype(out_dtype) if scale_refs else part
                        tg.commit_smem()
                        tg.copy_smem_to_gmem(buf, c.at[rows, cols])
            tiles(compute_tile, consumer=wg if pingpong else None)
            tg.wait_smem_to_gmem(0)

    return matmul
