"""The budget table: what a GEMM design can reach on a device, computed before compiling.

`budget(kernel_or_config, shape, device)` works through three layers, each row
with a one-line reason: the problem against the device roofline (FLOPs, bytes,
intensity vs balance point), the block against the SM (shared memory,
registers, threads, TMEM, blocks per SM), and the schedule against the machine
(tiles, waves and tail, L2 and DRAM traffic under the rasterisation, shared
memory bandwidth of the MMA, latency hiding of the pipeline). The predicted
time is the largest of three bounds, plus one launch:

    SM bound   = ceil(tiles / workers) * tile time (+ one load latency: a persistent block's first fill)
                 tile time = max(MMA time / SMEM efficiency / issue efficiency,
                                 load latency / (stages - 1 - release delay) per K step) + exposed fill and epilogue
                 (a persistent block's later tiles load while the one before ends: no fill of their own)
    DRAM bound = modelled DRAM bytes / (measured) DRAM bandwidth
    L2 bound   = L2->SM operand bytes / L2 bandwidth

tcgen05 (Blackwell) designs refine two terms. A K step's operands stream
through a queue: the loads in flight each take the load latency plus their
bytes at the SM's share of L2 bandwidth, so the L2 share enters the tile time
(and the fill and epilogue add to it) and every load in flight counts, also
where bandwidth binds (`_streamed_step`). The epilogue is its two phases,
TMEM -> SMEM and SMEM -> GMEM, overlapped when slices go through two or more
buffers and hidden by a second TMEM accumulator (`_tcgen05_epilogue`). The
WGMMA terms keep the forms their H200 measurements were compared with. A
promoting (block-scaled) design adds its drains and what of each K step's
promotion the WGMMAs do not cover (`_promotion`).

Ceilings are the device's measured ones where it has them (`DeviceSpec`); the
roofline rows quote the datasheet. A batched kernel is budgeted as its batch of
GEMMs in one launch; what the model does not count (a bias or residual input, a
second output) is listed under NOT MODELLED, and a kernel whose MMA the device
does not have (a tcgen05 kernel on an H200) gets a warning and an ILLEGAL line.
"""
import math
import warnings
from dataclasses import dataclass

from ..errors import ArgumentError
from ..lang import dtypes
from ..lang.arch import MAX_ARRAY_DIM, WARPGROUP_THREADS
from ..lang.ir import Graph
from ..lang.tensorcore import INPUT_DTYPES, WGMMA
from ..lang.trace import ShapeDtype
from . import layouts
from .config import GemmConfig, fma_thread_tile, plural, resources, round_up
from .devices import DEVICES, get_device
from .from_graph import config_from_graph, extra_params, graph_batch, graph_groups, graph_shape, swapped
from .traffic import cdiv, dram_operand_bytes

FMA_LOOP_INSTRUCTIONS = 3     # per K step of a SIMT thread besides its fragment loads: loop, address updates
ISSUE_SLOTS_PER_SM = 4        # warp instructions one SM issues per clock (4 schedulers)
SM_BOUND = "SM (MMA pipeline)"   # Budget.bound of a kernel whose SMs' work, not memory, sets its time


@dataclass(frozen=True)
class Row:
    """One line of the budget table: what, how much, and why."""
    name: str
    value: str
    why: str


@dataclass(frozen=True)
class Budget:
    """The budget table of one design on one problem and device; see the module docstring."""
    shape: tuple
    device: object
    config: GemmConfig
    resources: object
    flops: int
    min_bytes: int
    intensity: float
    balance: float
    compute_floor_s: float
    memory_floor_s: float
    roofline_floor_s: float
    blocks_per_sm: int
    occupancy_limit: str
    tiles: int
    waves: float
    tail_efficiency: float
    padding_efficiency: float
    l2_bytes_per_tile: float
    l2_bytes: float
    dram_bytes: float
    l2_miss_rate: float
    smem_bytes_per_flop: float
    smem_efficiency: float
    issue_efficiency: float
    latency_efficiency: float
    tile_time_s: float
    sm_time_s: float
    dram_time_s: float
    l2_time_s: float
    predicted_s: float
    bound: str
    problems: tuple
    rows: tuple
    batch: int = 1           # GEMMs of `shape` the launch computes (a batched kernel)
    notes: tuple = ()        # what the kernel does that the model does not count
    swapped: bool = False    # a swap-AB kernel (C^T = B^T A^T): `shape` is its MMA's, (N, M, K) of C

    @property
    def legal(self):
        """False when the design cannot run on the device at all (see `problems`)."""
        return not self.problems

    @property
    def predicted_tflops(self):
        return self.flops / self.predicted_s / 1e12

    def table(self):
        """The budget table as text: a header naming problem and design, then name / value / why rows."""
        c = self.config
        lines = [f"budget   {self.problem} {dtypes.name(c.dtype)} -> {dtypes.name(c.out_dtype)} on {self.device.name}",
                 f"design   {c.describe()}",
                 f"         (per-block resources from the {self.resources.source})",
                 "-" * 100]
        lines += [f"{r.name:<24}{r.value:<22}{r.why}" for r in self.rows]
        if self.problems:
            lines.append("-" * 100)
            lines += [f"ILLEGAL  {p}" for p in self.problems]
        if self.notes:
            lines.append("-" * 100)
            lines += [f"NOT MODELLED  {n}" for n in self.notes]
        return "\n".join(lines)

    @property
    def problem(self):
        """'MxNxK', or 'batch x MxNxK' for a batched kernel; a swap-AB kernel's says it computes C^T."""
        m, n, k = self.shape
        swap = f" (swap-AB: C^T = B^T A^T, C {n}x{m})" if self.swapped else ""
        return (f"{self.batch} x " if self.batch > 1 else "") + f"{m}x{n}x{k}{swap}"

    def __str__(self):
        return self.table()

    def __repr__(self):
        return (f"<tg.model.Budget {self.problem} on {self.device.name}: {self.predicted_s * 1e3:.3f} ms predicted, "
                f"{self.bound}-bound{'' if self.legal else ', ILLEGAL'}>")

    def _repr_html_(self):
        from ..notebook import budget_html
        return budget_html(self)

    def _repr_markdown_(self):
        from ..notebook import budget_markdown
        return budget_markdown(self)


def budget(target, shape=None, device="h200", dtype=None, *, a_layout="mk", b_layout="kn", extra_inputs=()):
    """The budget table of `target` (a GemmConfig, a tg.Kernel or a traced Graph) for C[M,N] = A[M,K] @ B[K,N].

    `shape` is (M, N, K), or (batch, M, N, K) for a batched kernel (A [batch, M, K],
    B [batch, K, N], C [batch, M, N]); a Graph carries its own. A Kernel is traced
    with inputs of `dtype` (default float16) stored as `a_layout` and `b_layout` say
    (model/layouts.py: A [M, K] or [K, M], B [K, N] or [N, K]), followed by the
    tg.ShapeDtype specs of `extra_inputs` (a bias, a residual) when it takes more;
    its resources come from the graph. `device` is a name ('h200', 'h100', 'b200',
    'a100') or a DeviceSpec. Warns (UserWarning) when the kernel's MMA is not one
    the device has, e.g. a tcgen05 (Blackwell) kernel budgeted for an H200. A
    swap-AB kernel (its MMA reads B as A: C^T = B^T A^T) is called with C's
    (M, N, K) and budgeted in its MMA's frame, (N, M, K): the table says so.
    """
    dev = get_device(device)
    config, shape, batch, notes, swap = _resolve(target, shape, dtype, (a_layout, b_layout), tuple(extra_inputs))
    if not all(1 <= d <= MAX_ARRAY_DIM for d in shape):
        raise ValueError(f"(M, N, K) = {shape}: each extent must be 1 to {MAX_ARRAY_DIM} (2^31), what int32 "
                         "indices reach in a kernel")
    if config.instruction not in dev.instructions:
        fits = sorted(name for name, d in DEVICES.items() if config.instruction in d.instructions)
        warnings.warn(f"the design uses {config.instruction} MMAs, which {dev.name} ({dev.arch}) does not have: "
                      f"its table is marked ILLEGAL; budget it for device={' or '.join(map(repr, fits))}",
                      UserWarning, stacklevel=2)
    return _estimate(config, shape, dev, batch, notes, swap)


def _resolve(target, shape, dtype, operand_layouts, extra_inputs):
    """(config, (M, N, K), batch, notes, swapped) of a budget() target: a config as given, a kernel traced, a graph
    read (a swap-AB kernel's in its MMA's frame: (N, M, K) of the C it is called for)."""
    lead, shape = _split_batch(shape)
    batch = math.prod(lead)
    if isinstance(target, GemmConfig):
        if shape is None:
            raise ValueError("budget(config, shape=(M, N, K)): a GemmConfig needs the problem shape")
        if dtype is not None and dtypes.as_dtype(dtype) != target.dtype:
            raise ValueError(f"the config's dtype is {dtypes.name(target.dtype)}; set GemmConfig(dtype=...) "
                             "instead of budget(dtype=...)")
        return target, shape, batch, (), False
    if not isinstance(target, Graph):
        if not callable(getattr(target, "trace", None)):  # a tg.Kernel, duck-typed: the model sits below kernel.py
            raise TypeError(f"budget() takes a GemmConfig, a tg.Kernel or a traced Graph, got {type(target).__name__}")
        if shape is None:
            raise ValueError("budget(kernel, shape=(M, N, K)): the kernel is traced with A and B of that shape")
        target = _trace(target, shape, lead, dtype, operand_layouts, extra_inputs)
    own, own_batch, swap = graph_shape(target), graph_batch(target), swapped(target)
    of_c = (own[1], own[0], own[2]) if swap else own
    if shape is not None and (tuple(shape), batch) != (of_c, own_batch):
        traced = (own_batch,) * (own_batch > 1) + of_c
        raise ValueError(f"the graph was traced for {'(batch, M, N, K)' if own_batch > 1 else '(M, N, K)'} = "
                         f"{traced}, not {(batch,) * (batch > 1) + tuple(shape)}")
    return config_from_graph(target), own, own_batch, _not_modelled(target), swap


def _not_modelled(graph):
    """One note per input or output besides A, B and C (a bias, a residual, a second output), and one for the
    weights of a grouped GEMM."""
    groups = graph_groups(graph)
    grouped = ((f"B stacks {groups} weights, one selected per tile at run time (a grouped GEMM): budgeted as one "
                "GEMM of C's shape against a single weight; reading several weights from DRAM is not in the "
                "traffic rows",) if groups > 1 else ())
    return grouped + tuple(
        f"{kind} {i}{f' ({x.name_hint})' if x.name_hint else ''} {_spec(x)}, {_bytes(x.type.nbytes)}: "
        "its bytes are not in the traffic rows or the time" for kind, i, x in extra_params(graph))


def _split_batch(shape):
    """((batch,) or (), (M, N, K)) of a budget() shape: (M, N, K) or (batch, M, N, K)."""
    if shape is None:
        return (), None
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (3, 4):
        raise ValueError(f"shape must be (M, N, K) or (batch, M, N, K), got {shape}")
    return shape[:-3], shape[-3:]


def _trace(kernel, shape, lead, dtype, operand_layouts, extra_inputs):
    """The graph of `kernel` traced with A and B of `shape`, leading with the batch dimensions `lead`, then
    `extra_inputs`."""
    dt = dtypes.as_dtype(dtype if dtype is not None else dtypes.float16)
    a, b = (ShapeDtype(lead + spec.shape, spec.dtype) for spec in layouts.operand_specs(*shape, dt, *operand_layouts))
    try:
        return kernel.trace(a, b, *extra_inputs)
    except ArgumentError as e:
        raise ArgumentError(f"budget() traces the kernel with A {_spec(a)} and B {_spec(b)}"
                            + (f" and extra_inputs {', '.join(map(_spec, extra_inputs))}" if extra_inputs else "")
                            + f": {e}. Give a kernel's inputs after A and B as extra_inputs=[tg.ShapeDtype(shape, "
                            "dtype), ...], or budget a traced graph: budget(kernel.trace(a, b, ...))") from e


def _spec(spec):
    return f"{dtypes.name(spec.dtype)}{list(spec.shape)}"


class _Sheet:
    """The rows and problems collected while the table is worked out, layer by layer."""

    def __init__(self):
        self.rows, self.problems = [], []

    def row(self, name, value, why):
        self.rows.append(Row(name, value, why))

    def problem(self, text):
        self.problems.append(text)


def _estimate(c, shape, dev, batch=1, notes=(), swap=False):
    """Works out every figure in table order; each layer adds its rows and problems to the sheet."""
    m, n, k = shape
    sheet = _Sheet()
    if c.instruction not in dev.instructions:
        sheet.problem(f"{dev.name} ({dev.arch}) has no {c.instruction} path; it supports "
                      f"{', '.join(dev.instructions)}")
    if c.instruction != "fma" and c.dtype not in INPUT_DTYPES:
        sheet.problem(f"{c.instruction} multiplies {', '.join(dtypes.name(d) for d in INPUT_DTYPES)} operands, "
                      f"not {dtypes.name(c.dtype)}; "
                      "use 'fma' for f32")
    roof = _roofline(sheet, c, shape, dev, batch)
    res, bps, occupancy_limit = _occupancy(sheet, c, dev)
    waves = _waves(sheet, c, shape, dev, batch)
    if c.instruction != "fma":
        _operand_layouts(sheet, c)
    traffic = _traffic(sheet, c, shape, dev, bps, waves["grid_blocks"], roof["min_bytes"], batch)
    tile = _tile_time(sheet, c, shape, dev, res, bps, waves["grid_blocks"], traffic)

    first_fill = tile.pop("first_fill_s")
    sm_time = first_fill + waves["rounds"] * tile["tile_time_s"]
    bounds = {SM_BOUND: sm_time, "DRAM": traffic["dram_time_s"], "L2": traffic["l2_time_s"]}
    bound = max(bounds, key=bounds.get)
    predicted = bounds[bound] + dev.launch_overhead_s
    sheet.row("predicted time", _time(predicted),
              f"max(SM {_time(sm_time)} = {'first fill + ' if first_fill else ''}"
              f"{plural(waves['rounds'], 'round')} x tile, DRAM "
              f"{_time(traffic['dram_time_s'])}, L2 {_time(traffic['l2_time_s'])}) + "
              f"{_time(dev.launch_overhead_s)} launch: {bound}-bound")
    sheet.row("predicted rate", f"{roof['flops'] / predicted / 1e12:.1f} TFLOP/s",
              f"{roof['roofline_floor_s'] / predicted:.0%} of the roofline floor")
    del waves["grid_blocks"], waves["rounds"]
    return Budget(shape=shape, device=dev, config=c, resources=res, blocks_per_sm=bps,
                  occupancy_limit=occupancy_limit, sm_time_s=sm_time, predicted_s=predicted, bound=bound,
                  problems=tuple(sheet.problems), rows=tuple(sheet.rows), batch=batch, notes=tuple(notes),
                  swapped=swap, **roof,
                  **waves, **traffic, **tile)


def _roofline(sheet, c, shape, dev, batch):
    """Layer 1, the problem against the device: FLOPs, minimum bytes, intensity vs balance, the floors."""
    m, n, k = shape
    in_size, out_size = dtypes.itemsize(c.dtype), dtypes.itemsize(c.out_dtype)
    peak = dev.peak_flops(c.instruction, dtype=c.dtype) or dev.fp32_flops
    flops = 2 * batch * m * n * k
    min_bytes = batch * ((m * k + k * n) * in_size + m * n * out_size)
    intensity = flops / min_bytes
    balance = peak / dev.dram_bw
    compute_floor, memory_floor = flops / peak, min_bytes / dev.dram_bw
    roofline = max(compute_floor, memory_floor)
    per_batch = " for each of the batch's GEMMs" if batch > 1 else ""
    sheet.row("FLOPs", f"{flops / 1e9:.2f} GFLOP", "2*batch*M*N*K" if batch > 1 else "2*M*N*K")
    sheet.row("min bytes", _bytes(min_bytes), f"A and B read once, C written once{per_batch}")
    sheet.row("intensity", f"{intensity:.1f} FLOP/B",
              f"vs balance {balance:.2f} FLOP/B ({_rate(peak)} / {_bw(dev.dram_bw)}): "
              + ("compute-bound" if intensity > balance else "memory-bound"))
    measured = dev.peak_flops(c.instruction, measured=True, dtype=c.dtype)
    measured_note = (f"; {_time(flops / measured)} at the measured {_rate(measured)}"
                     if dev.is_measured(c.instruction) else "")
    unit = "tensor" if c.instruction != "fma" else "FP32 FMA"
    sheet.row("compute floor", _time(compute_floor), f"FLOPs / datasheet {unit} {_rate(peak)}{measured_note}")
    sheet.row("memory floor", _time(memory_floor), f"min bytes / datasheet {_bw(dev.dram_bw)}")
    sheet.row("roofline floor", _time(roofline), "the larger of the two: no design beats it")
    return dict(flops=flops, min_bytes=min_bytes, intensity=intensity, balance=balance,
                compute_floor_s=compute_floor, memory_floor_s=memory_floor, roofline_floor_s=roofline)


def _occupancy(sheet, c, dev):
    """Layer 2, one block against one SM: shared memory, registers, threads, TMEM -> blocks per SM."""
    res = resources(c)
    smem = res.smem_bytes
    sheet.row("smem / block", f"{smem:,} B",
              f"{_kib(res.smem_operand)} A/B stages + {_kib(res.smem_other)} epilogue/other + "
              f"{res.smem_barriers} B barriers" + (f" + {res.smem_padding} B alignment" if res.smem_padding else "")
              + f"; limit {_kib(dev.limits.smem_per_block)}")
    if smem > dev.limits.smem_per_block:
        sheet.problem(f"shared memory {smem:,} B ({_kib(smem)}) per block exceeds the {_kib(dev.limits.smem_per_block)} "
                      f"a block may use on {dev.name}; use fewer stages or smaller tiles")
    mma_threads = min(c.consumers * WARPGROUP_THREADS, res.threads)
    regs_block = (mma_threads * round_up(res.mma_registers, dev.limits.register_granularity)
                  + (res.threads - mma_threads) * round_up(res.producer_registers, dev.limits.register_granularity))
    accumulator = ("the accumulator lives in TMEM" if c.instruction == "tcgen05" else
                   f"{res.acc_registers} accumulator registers per MMA thread")
    sheet.row("registers / thread", f"{res.mma_registers}" + (f" / {res.producer_registers}" if c.producers else ""),
              f"{'setmaxnreg' if c.max_registers else 'estimate'}: {accumulator}"
              + (" (+ producer warpgroups)" if c.producers else "") + f"; {regs_block:,} per block")
    if res.mma_registers > dev.limits.max_registers_per_thread:
        sheet.problem(f"{res.mma_registers} registers per thread (of which {res.acc_registers} accumulator) exceed "
                      f"the {dev.limits.max_registers_per_thread} a thread can have: the accumulator would spill; split "
                      "the tile over more consumer warpgroups or use a smaller tile")
    sheet.row("threads / block", f"{res.threads}", f"{plural(res.threads // WARPGROUP_THREADS, 'warpgroup')} of 128")
    if res.threads > dev.limits.max_threads_per_block:
        sheet.problem(f"{res.threads} threads per block exceed the {dev.limits.max_threads_per_block} limit")
    if c.instruction == "tcgen05" and dev.limits.tmem_columns:
        sheet.row("TMEM columns", f"{res.tmem_columns}",
                  f"f32 accumulator {c.tile_n} columns x {c.acc_buffers} buffers; limit {dev.limits.tmem_columns}")
        if res.tmem_columns > dev.limits.tmem_columns:
            sheet.problem(f"{res.tmem_columns} TMEM columns exceed the {dev.limits.tmem_columns} of an SM")
    cluster_size = c.cluster[0] * c.cluster[1]
    if cluster_size > dev.limits.max_cluster_size:
        sheet.problem(f"a cluster of {cluster_size} blocks exceeds the {dev.limits.max_cluster_size} {dev.name} allows")
    limits = {
        "shared memory": dev.limits.smem_per_sm // (smem + dev.limits.smem_reserved_per_block),
        "registers": dev.limits.registers_per_sm // max(regs_block, 1),
        "threads": dev.limits.max_threads_per_sm // max(res.threads, 1),
        "blocks": dev.limits.max_blocks_per_sm,
    }
    if res.tmem_columns and dev.limits.tmem_columns:
        limits["TMEM"] = dev.limits.tmem_columns // res.tmem_columns
    limit = min(limits, key=limits.get)
    sheet.row("blocks / SM", f"{limits[limit]}", f"limited by {limit} ("
              + ", ".join(f"{name} {v}" for name, v in limits.items()) + ")")
    if limits[limit] < 1:
        sheet.problem(f"one block does not fit on an SM ({limit})")
    return res, max(limits[limit], 1), limit


def _waves(sheet, c, shape, dev, batch):
    """Layer 3a: output tiles, waves of one tile per SM, and the rounds the blocks take (tail effect). Blocks in
    clusters take their tiles a cluster's worth at a time (the last row or column of clusters may hold padding),
    and no more clusters run at once than the device holds."""
    m, n, _ = shape
    tiles_m, tiles_n = cdiv(m, c.tile_m), cdiv(n, c.tile_n)
    tiles = batch * tiles_m * tiles_n
    padding = m * n / (tiles * c.tile_m * c.tile_n)
    size = c.cluster[0] * c.cluster[1]
    units = batch * cdiv(tiles_m, c.cluster[0]) * cdiv(tiles_n, c.cluster[1])
    grid_blocks = (c.grid_blocks or dev.sms) if c.persistent else units * size
    clusters = max(1, min(grid_blocks, dev.cluster_grid_sms(size, dev.sms)) // size)
    workers = clusters * size
    waves = tiles / dev.sms
    rounds = math.ceil(units / clusters)
    sheet.row("tiles", f"{tiles:,} = {f'{batch} x ' if batch > 1 else ''}{tiles_m} x {tiles_n}",
              f"{c.tile_m}x{c.tile_n} output tiles; {padding:.1%} of their area is inside C"
              + (f"; {units:,} units of {size} in clusters" if size > 1 else ""))
    sheet.row("waves", f"{waves:.2f}", f"tiles / {dev.sms} SMs (blocks sharing an SM share its throughput)")
    sheet.row("tail efficiency", f"{waves / rounds:.1%}", f"{waves:.2f} waves take {plural(rounds, 'round')} of "
              f"{workers} " + ("persistent blocks" if c.persistent else "blocks at a time")
              + (f" ({clusters} clusters of {size})" if size > 1 else ""))
    return dict(tiles=tiles, waves=waves, tail_efficiency=waves / rounds, padding_efficiency=padding,
                grid_blocks=grid_blocks, rounds=rounds)


def _operand_layouts(sheet, c):
    """How A and B are stored, and the TMA boxes that fill a stage (model/layouts.py says why the layout costs
    no time)."""
    in_size = dtypes.itemsize(c.dtype)
    b_cols = c.tile_n // 2 if c.two_cta else c.tile_n
    boxes = []
    for which, layout, mn in (("A", c.a_layout, c.tile_m), ("B", c.b_layout, b_cols)):
        count = layouts.tma_boxes(layout, mn, c.tile_k, in_size)
        boxes.append(f"{layouts.describe(which, layout)}: {count} TMA box{'es' if count > 1 else ''} per stage")
    sheet.row("operand layouts", f"a {c.a_layout}, b {c.b_layout}",
              f"{'; '.join(boxes)}; the bytes, their L2/DRAM rows and the swizzled SMEM reads do not depend on "
              "the layout: no time charged")


def _traffic(sheet, c, shape, dev, bps, grid_blocks, min_bytes, batch):
    """Layer 3b: operand bytes from L2 into the SMs (tile re-reads) and from DRAM (what L2 cannot keep).
    The GEMMs of a batch share no panels: those running at once split L2 between them."""
    m, n, k = shape
    in_size, out_size = dtypes.itemsize(c.dtype), dtypes.itemsize(c.out_dtype)
    tiles_m, tiles_n = cdiv(m, c.tile_m), cdiv(n, c.tile_n)
    k_padded = cdiv(k, c.tile_k) * c.tile_k
    a_share, b_share = c.operand_shares
    a_lines = layouts.line_factor(c.a_layout, m, k, c.tile_m, c.tile_k, in_size)
    b_lines = layouts.line_factor(c.b_layout, n, k, c.tile_n, c.tile_k, in_size)
    operand_bytes = k_padded * (c.tile_m * in_size / a_share + c.tile_n * in_size / b_share)
    per_tile = k_padded * (c.tile_m * in_size * a_lines / a_share + c.tile_n * in_size * b_lines / b_share)
    c_bytes = batch * m * n * out_size
    l2_total = batch * tiles_m * tiles_n * per_tile + c_bytes
    l2_time = l2_total / dev.l2_bw
    share_note = f"; A shared by {a_share}, B by {b_share} blocks" if (a_share, b_share) != (1, 1) else ""
    line_note = "".join(f"; {which}'s rows start mid-line: x{lines:.2f} L2 lines" for which, lines in
                        (("A", a_lines), ("B", b_lines)) if lines > 1)
    sheet.row("L2->SM / tile", _bytes(per_tile), f"(tile_m + tile_n) x K operand elements per tile, in whole "
              f"{layouts.L2_LINE_BYTES}-byte L2 lines{share_note}{line_note}")
    sheet.row("L2->SM total", _bytes(l2_total), f"{l2_total / min_bytes:.1f}x min bytes; {_time(l2_time)} at "
              f"{_bw(dev.l2_bw)} (estimate)")
    concurrent = max(1, min(grid_blocks, dev.sms * bps))
    per_gemm = min(concurrent, tiles_m * tiles_n)            # tiles of one GEMM running at once
    l2_share = dev.l2_bytes // max(1, concurrent // per_gemm)
    dram_total = batch * dram_operand_bytes(tiles_m, tiles_n, c.cluster, c.raster, per_gemm,
                                            c.tile_m * k_padded * in_size, c.tile_n * k_padded * in_size,
                                            l2_share) + c_bytes
    bw = dev.bandwidth(measured=True)
    at_once = (f"{per_gemm} tiles of each of {concurrent // per_gemm} GEMMs at a time" if batch > 1
               else f"{concurrent} tiles at a time")
    sheet.row("DRAM traffic", _bytes(dram_total),
              f"{dram_total / min_bytes:.2f}x min bytes: {at_once} in "
              f"{_order_name(c, tiles_m, tiles_n)}, panels reused while {_bytes(l2_share)} of L2 holds them; "
              f"{_time(dram_total / bw)} at {_bw(bw)}")
    operand_miss = min(1.0, (dram_total - c_bytes) / (batch * tiles_m * tiles_n * operand_bytes))
    return dict(l2_bytes_per_tile=per_tile, l2_bytes=l2_total, dram_bytes=dram_total, dram_time_s=dram_total / bw,
                l2_time_s=l2_time, l2_miss_rate=operand_miss)


def _tile_time(sheet, c, shape, dev, res, bps, grid_blocks, traffic):
    """Layer 3c: one tile's time on one SM: MMA at the (measured) peak, slowed by SMEM bandwidth, FMA issue
    and load latency the pipeline cannot hide, plus the fill and epilogue nothing overlaps."""
    k = shape[2]
    in_size, out_size = dtypes.itemsize(c.dtype), dtypes.itemsize(c.out_dtype)
    smem_per_flop = _smem_bytes_per_flop(c, in_size)
    smem_balance = dev.smem_bytes_per_flop(c.instruction, c.dtype) if c.instruction in dev.instructions else smem_per_flop
    smem_eff = min(1.0, smem_balance / smem_per_flop)
    sheet.row("SMEM bandwidth", f"{smem_per_flop * 1000:.1f} mB/FLOP",
              f"{_smem_why(c)}; the SM supplies {smem_balance * 1000:.1f} mB/FLOP -> {smem_eff:.0%} of MMA peak")
    issue_eff = _fma_issue(sheet, c, dev, res) if c.instruction == "fma" else 1.0

    peak = dev.peak_flops(c.instruction, measured=True, dtype=c.dtype) or dev.fp32_flops
    k_steps = cdiv(k, c.tile_k)
    mma_time = 2 * c.tile_m * c.tile_n * k_steps * c.tile_k / (peak / dev.sms) / (smem_eff * issue_eff)
    resident = min(bps, cdiv(grid_blocks, dev.sms))   # blocks that actually share an SM
    miss = traffic["l2_miss_rate"]
    latency = miss * dev.dram_latency_s + (1 - miss) * dev.l2_latency_s
    latency_why = (f"{_time(latency)} load latency ({1 - miss:.0%} L2 hits at {_time(dev.l2_latency_s)}, "
                   f"misses at {_time(dev.dram_latency_s)})")
    in_flight = c.stages - 1 - c.release_delay
    l2_share = dev.l2_bw / min(grid_blocks, dev.sms)     # the L2 bandwidth of one SM while every SM streams
    if in_flight >= 1 and c.instruction == "tcgen05":
        step = _streamed_step(in_flight * resident, latency, traffic["l2_bytes_per_tile"] / k_steps / l2_share)
        core = max(mma_time, k_steps * step)
        why = (f"{in_flight} loads in flight through {latency_why} and this SM's {_bw(l2_share)} share of L2: "
               f"{_time(step)} per K step (queueing) vs MMA {_time(mma_time / k_steps * resident)}")
    elif in_flight >= 1:
        core = max(mma_time, k_steps * latency / (in_flight * resident))
        why = f"{in_flight} loads in flight x {_time(mma_time / k_steps * resident)} per K step vs {latency_why}"
    else:
        core = mma_time + k_steps * latency / resident
        why = (f"no load overlaps the MMAs ({plural(c.stages, 'stage')}, release delay {c.release_delay}): "
               f"{latency_why}")
    sheet.row("latency hiding", f"{mma_time / core:.0%}", why + (f", {resident} blocks per SM" if resident > 1 else ""))
    if c.pingpong:
        core += _lone_issue(sheet, c, dev, mma_time, k_steps)
    if c.promotion:
        core = _promoted_loop(sheet, c, dev, core + _promotion(sheet, c, dev, mma_time, k_steps), k_steps)
    fill = latency if _fills_every_tile(c) else 0.0   # else a persistent block pays its first fill once: first_fill_s
    if c.instruction == "tcgen05":
        epilogue = _tcgen05_epilogue(sheet, c, dev, out_size, l2_share)
    else:
        epilogue = 0.0 if c.acc_buffers >= 2 else c.tile_m * c.tile_n * out_size / (dev.l2_bw / dev.sms)
    exposed = (fill + epilogue) / resident
    sheet.row("tile time", _time(core + exposed),
              f"MMA {_time(mma_time)} at {_rate(peak)}{' (measured)' if dev.is_measured(c.instruction) else ''}"
              f" + exposed {'fill + ' if fill else ''}{'epilogue' if epilogue else 'nothing'} {_time(exposed)}")
    return dict(smem_bytes_per_flop=smem_per_flop, smem_efficiency=smem_eff, issue_efficiency=issue_eff,
                latency_efficiency=mma_time / core, tile_time_s=core + exposed,
                first_fill_s=0.0 if _fills_every_tile(c) else latency / resident)


def _fills_every_tile(c):
    """Whether each of a block's tiles waits for its first stage to land: one block per tile does; a persistent block
    does only for its first tile (its producer runs ahead into the next), unless it multicasts WGMMA operands with
    its cluster's peers, whose loads fill its stages too: fitted, not traced to a cause. 128x128 tiles in clusters of
    four over two rounds ran 6-9% slower than 128x256 ones over one at 1500x2504x1000 on the H200, 15-18% on an
    H100, which the model had tied (benchmarks/RESULTS.md runs 124-210); with each tile's fill charged, the model
    ranks more of the pairs measured side by side right (benchmarks/model_fit.py)."""
    return not c.persistent or (c.multicast and c.cluster != (1, 1) and c.instruction == "wgmma")


def _streamed_step(loads, latency, service):
    """Seconds per K step of a pipeline keeping `loads` operand loads in flight, each taking `latency` plus
    `service` (its bytes at the SM's share of L2 bandwidth) in a queue with the others: mean value analysis of
    that closed loop. One load: latency + service; many: service (bandwidth-bound); in between, both count."""
    queue = 0.0
    for n in range(1, loads + 1):
        response = service * (1 + queue)
        throughput = n / (latency + response)
        queue = throughput * response
    return 1 / throughput


def _tcgen05_epilogue(sheet, c, dev, out_size, l2_share):
    """Seconds of a tile's epilogue that no MMA overlaps: TMEM -> registers -> SMEM at SMEM bandwidth, then
    TMA stores at the SM's L2 share; slices through two or more buffers overlap the two. None at all with
    two TMEM accumulators: the next tile's MMAs run meanwhile."""
    if c.acc_buffers >= 2:
        sheet.row("epilogue", "overlapped", f"{c.acc_buffers} TMEM accumulators: the next tile's MMAs run meanwhile")
        return 0.0
    nbytes = c.tile_m * c.tile_n * out_size
    store = nbytes / l2_share
    if c.epilogue_tile is None:
        sheet.row("epilogue", _time(store), f"registers -> GMEM at {_bw(l2_share)}")
        return store
    convert = nbytes / (dev.smem_bytes_per_clk * dev.clock_hz)
    slices = nbytes // (math.prod(c.epilogue_tile) * out_size)
    phases = f"TMEM -> SMEM {_time(convert)}, SMEM -> GMEM {_time(store)}"
    if slices >= 2 and c.epilogue_buffers >= 2:
        exposed = max(convert, store) + min(convert, store) / slices
        sheet.row("epilogue", _time(exposed), f"{phases}, overlapped over {slices} slices in "
                  f"{c.epilogue_buffers} buffers")
        return exposed
    sheet.row("epilogue", _time(convert + store), f"{phases}, one after the other (one buffer for the tile)")
    return convert + store


def _lone_issue(sheet, c, dev, mma_time, k_steps):
    """Ping-pong consumers issue WGMMAs one at a time: what of a K step's bookkeeping (a fixed cost per WGMMA group
    issued) the last group still in flight does not cover leaves the tensor cores idle (the loop waits with one
    group in flight)."""
    groups = c.tile_m // WGMMA.m              # one WGMMA group per 64-row accumulator of the consumer
    cover = mma_time / k_steps / groups
    bookkeeping = groups * dev.wgmma_group_overhead_s
    gap = max(0.0, bookkeeping - cover)
    sheet.row("lone issue", _time(gap * k_steps),
              f"ping-pong: one warpgroup issues at a time; its last WGMMA group ({_time(cover)}) covers "
              f"{min(1.0, cover / bookkeeping):.0%} of the {_time(bookkeeping)} bookkeeping of each K step "
              f"({plural(groups, 'group')} x {_time(dev.wgmma_group_overhead_s)}, estimate)")
    return gap * k_steps


def _promotion(sheet, c, dev, mma_time, k_steps):
    """Seconds of the K loop a promoting design's tensor cores idle. Adding a step's 64 x N partial, scaled, into
    the tile's accumulator is one FMA per element (one warp instruction per 32 elements on each SM
    sub-partition); with two or more partials it runs while the next step's WGMMAs do, with one it follows a
    drain. Every `drain_steps` K steps the consumers wait for every WGMMA in flight (`wgmma_drain_s`, fitted);
    consumers reading their scales from GMEM spend `scale_read_s` (fitted) a step on it."""
    am, an = c.mma_tile
    add = am * an / WARPGROUP_THREADS / dev.clock_hz
    step = mma_time / k_steps
    overlapped = c.promotion.partials > 1
    reads = dev.scale_read_s if c.promotion.gmem_scales else 0.0
    exposed = (max(0.0, add - step) if overlapped else add) + dev.wgmma_drain_s / c.promotion.drain_steps + reads
    how = (f"each K step's scaled add ({_time(add)}) runs under the next step's WGMMAs ({_time(step)})"
           if overlapped else f"each K step's scaled add ({_time(add)}) follows its drain")
    where = (f"its scales read from GMEM by the consumers ({_time(reads)} a step, fitted)" if reads else
             "its scales staged in SMEM")
    sheet.row("promotion", _time(exposed * k_steps),
              f"{how}; every {plural(c.promotion.drain_steps, 'K step')} the consumers wait for every WGMMA in "
              f"flight ({_time(dev.wgmma_drain_s)}, fitted) of a {am}x{an} partial; {where}")
    return exposed * k_steps


def _promoted_loop(sheet, c, dev, core, k_steps):
    """A promoting design's K loop: `core` seconds, or `promoted_step_s` (fitted) a K step where that is longer:
    each step's WGMMAs must land before the consumer promotes them and issues the next, a round trip that narrow
    tiles' WGMMAs do not fill."""
    floor = k_steps * dev.promoted_step_s
    if floor > core:
        sheet.row("promoted step", _time(floor),
                  f"the K loop takes at least {_time(dev.promoted_step_s)} a step (fitted) of a consumer's round trip "
                  f"from issuing a step's WGMMAs to promoting them, more than its {_time(core / k_steps)}")
    return max(core, floor)


def _fma_issue(sheet, c, dev, res):
    """The instruction-issue ceiling of a SIMT thread: the fraction of FMA peak left after loads and loop
    overhead."""
    rows, cols = fma_thread_tile(res.acc_registers)
    aux = (rows / 4 + cols / 4 + FMA_LOOP_INSTRUCTIONS) / (rows * cols)
    fma_per_clk = min(ISSUE_SLOTS_PER_SM, dev.fp32_flops / (2 * 32 * dev.sms * dev.clock_hz))
    issue_eff = min(1.0, ISSUE_SLOTS_PER_SM / (fma_per_clk * (1 + aux)))
    sheet.row("FMA issue", f"{issue_eff:.0%}", f"{rows}x{cols} outputs per thread: {aux:.2f} extra instructions "
              f"per FMA; FMA takes {fma_per_clk:.1f} of {ISSUE_SLOTS_PER_SM} issue slots per clock")
    return issue_eff


def _order_name(c, tiles_m, tiles_n):
    """How the tile order reads: launch order, one band (plain row- or column-major), or a planar snake."""
    if c.raster is None:
        return "launch order (m fastest)"
    minor_size = (cdiv(tiles_m, c.cluster[0]), cdiv(tiles_n, c.cluster[1]))[c.raster.minor_dim]
    if c.raster.tile_width >= minor_size:
        return f"one band ({'mn'[c.raster.minor_dim]} fastest)"
    return str(c.raster)


def _smem_bytes_per_flop(c, in_size):
    """Shared-memory operand bytes the MMA reads per FLOP at the instruction level."""
    if c.instruction == "wgmma":
        am, an = c.mma_tile
        am = max(am, WGMMA.m)
        return (am + am // WGMMA.m * an) * in_size / (2 * am * an)
    b_cols = c.tile_n // 2 if c.two_cta else c.tile_n
    return (c.tile_m + b_cols) * in_size / (2 * c.tile_m * c.tile_n)


def _smem_why(c):
    if c.instruction == "wgmma":
        am, an = c.mma_tile
        return f"wgmma {am}x{an} per warpgroup re-reads B ({an} wide) for every {WGMMA.m} rows"
    if c.instruction == "tcgen05":
        return "tcgen05 reads A and B once per K step" + (" (B split over the 2-CTA pair)" if c.two_cta else "")
    return f"{c.tile_m}x{c.tile_n} block tile reads tile_m + tile_n elements per 2*tile_m*tile_n FLOPs"


def _time(s):
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} us"


def _bytes(b):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def _kib(b):
    return f"{b / 1024:g} KiB"


def _rate(flops):
    return f"{flops / 1e12:.1f} TFLOP/s"


def _bw(bytes_per_s):
    return f"{bytes_per_s / 1e12:.2f} TB/s"
