"""`tg.tune_matmul(a, b)`: tg.matmul's design for one problem chosen by timing candidates on the GPU.

The model ranks tg.matmul's designs without compiling anything, and some it
cannot tell apart: it sees the L2 lines misaligned rows cost and what clusters
sharing a tile by TMA multicast save of them, and the extra rounds a cluster
grid can take, but not what else a cluster costs or saves (measured 0.66-1.26x
their plain twins on ragged shapes, benchmarks/RESULTS.md runs 60 and 64).
Tuning runs, on the caller's own arrays, the model's TOP_K best designs, the
least-waste swapped 128-row tile, and the model's pick and that tile plain and
in clusters of CLUSTER_SIZES (on grids of the clusters the driver says the GPU
holds at once: dispatch.live_sheet); checks every output (poisoned first, then
sampled against a float64 product); times them interleaved; and records the
fastest for tg.matmul (tilegemm.ops.tuned) if it beat the model's pick by
MARGIN. A block-scaled call (or promote=True) times the model's TOP_K best
block-scaled designs, whose ranking of 128- and 256-row tiles an H100 and the
H200 measured opposite ways (benchmarks/RESULTS.md runs 152 and 188), each
staging its scales at every ring depth from four (those GPUs run 128x128 tiles
fastest in four and in five stages: runs 199-205), and the 256-row ones also
loading with L2 promotion (TALL_TILE_PROMOTION).
"""
import random
import statistics
from dataclasses import dataclass, field

import numpy as np

from .. import notebook
from ..errors import ArgumentError, TileGemmError
from ..lang import dtypes
from ..runtime import readers, time_kernel
from ..runtime.arrays import library_of
from ..runtime.launch import launch_stream
from ..runtime.memory import DeviceArray
from . import blockscaling, designs, dispatch, tuned
from . import epilogue as fused_epilogue

TOP_K = 3                  # the model's best-ranked designs timed (its pick first)
CLUSTER_SIZES = designs.CLUSTER_SIZES   # the pick and the swapped tile also run plain and in clusters of these
PREDICTED_SPAN = 1.25      # designs predicted slower than the pick by more than this are not timed (the model's
                           # errors between designs it ranks close: RESULTS.md runs 43-52)
MARGIN = 0.02              # a design replaces the model's pick only if measured this much faster: timings of one
                           # kernel move 1-3% between runs (RESULTS.md runs 50-55); leads of 2.6% and 4.9% here
                           # fell to 6% and 0.2% behind in the benchmark's CUDA-graph rounds on an H100 (runs 259,
                           # 267); a lead's size depends on the batch length, not on clocks or graphs (271-272)
TOLERANCE = 2e-2           # relative (Frobenius) difference from the float64 product a checked sample may have:
                           # f32 accumulation rounded to bf16 is ~4e-3; fp8 summed by the tensor cores alone,
                           # 2-4e-3 (benchmarks/RESULTS.md run 182)
SAMPLE = 64                # rows and columns of the output checked against float64
ROUNDS = 7
ROUND_MS = 100.0           # GPU time each design runs per round: long enough for a power-limited GPU to settle at
                           # its sustained clocks (in 20 ms batches an H100 ranked block-scaled tiles otherwise:
                           # benchmarks/RESULTS.md runs 243-245)
TALL_TILE_PROMOTION = 256  # block-scaled 256-row tiles are also timed loading with this L2 promotion: 3-4% faster
                           # at K = 16384, 1-2% slower at K <= 8192 (an H100, benchmarks/RESULTS.md runs 228-231)


@dataclass
class Trial:
    """One candidate design: its build() parameters, the model's predicted seconds, and what running it gave
    (measured seconds, or why it was not timed)."""
    params: dict
    predicted_s: float
    measured_s: float = None
    error: float = None
    reason: str = None
    launch: object = field(default=None, repr=False)
    iters: int = field(default=0, repr=False)
    samples: list = field(default_factory=list, repr=False)

    @property
    def label(self):
        return designs.label(self.params)


@dataclass
class Tuning:
    """What `tune_matmul` found for a problem: every trial (the model's pick first) and the design chosen."""
    problem: tuned.Problem
    trials: list
    best: Trial
    recorded: bool

    @property
    def pick(self):
        return self.trials[0]

    @property
    def speedup(self):
        """The model's pick's measured time over the chosen design's."""
        return self.pick.measured_s / self.best.measured_s

    @property
    def headline(self):
        p = self.problem
        return (f"{p.name} on {p.device}: {self.best.label}, "
                f"{self.speedup:.3f}x the model's pick" + (" (recorded: tg.matmul runs it)" if self.recorded else ""))

    def __repr__(self):
        lines = [f"tg.tune_matmul {self.headline}"]
        for _, (mark, label, predicted, measured, speedup, check) in notebook.matmul_tuning_rows(self):
            lines.append(f" {'*' if mark else ' '} {label:62s} predicted {predicted:>11s}  measured {measured:>11s}  "
                         f"{speedup:>6s}  {check}")
        return "\n".join(lines)

    def _repr_html_(self):
        return notebook.matmul_tuning_html(self)

    def _repr_markdown_(self):
        return notebook.matmul_tuning_markdown(self)


def candidates(problem, top_k=TOP_K, cluster_sizes=CLUSTER_SIZES, fused=None, block_scales=None):
    """[(params, predicted seconds)] worth timing for `problem` (fusing epilogue `fused`, promoting with
    `block_scales`, as its dispatch.Call does): the model's pick (`pick`) first, the next of its ranking up to
    `top_k`; block-scaled, each of those also at its other ring depths (designs.staged_rings, predicted alike)
    and the 256-row ones promoted (`promoted_tall_tiles`); else the swapped tile (`swapped_tile`) and, where
    multicast can help the pick (`_multicast_can_help`), the pick and the swapped tile plain and in clusters of
    `cluster_sizes` (`in_clusters`); of all these, the designs that can fuse `fused` predicted within
    PREDICTED_SPAN of the pick, each launching as tg.matmul would run it (`as_run`), so that a design reached two
    ways is timed once."""
    p = problem
    first = pick(problem, fused, block_scales)
    if block_scales is not None:
        ranked = [(params, prediction.predicted_s) for params, prediction in designs.block_scaled_predictions(
            p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms, block_scales)]
        chosen = [item for item in ranked if item[0] == first] + [item for item in ranked
                                                                  if item[0] != first][:top_k - 1]
        rings = [(ring, predicted_s) for params, predicted_s in chosen
                 for ring in designs.staged_rings(p.m, p.n, p.k, p.dtype_name, params, block_scales)]
        return _within_span(chosen + rings + promoted_tall_tiles(chosen))
    dtype = dtypes.as_dtype(p.dtype_name)
    transposable = fused is not None and fused_epilogue.transposable(fused, p.m, p.n)
    ranked = [params for params, _ in designs.predictions(p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms,
                                                          p.a_layout, p.b_layout)]
    swapped = [tile for tile in [swapped_tile(problem)] if tile is not None]
    plain = [first] + [params for params in ranked if params != first][:top_k - 1] + swapped
    clustered = [in_clusters(problem, params, c) for params in [first] + swapped if designs.clusterable(params)
                 for c in (1, *cluster_sizes)] if _multicast_can_help(p, dtype, first) else []
    found = []
    for params in plain + clustered:
        run = as_run(problem, params)
        if run is not None and run[1].gemm.legal and (fused is None or designs.fusable(params, transposable)):
            found.append((run[0], run[1].predicted_s))
    return _within_span(found)


def as_run(problem, params):
    """(`params` as tg.matmul would launch them on `problem`'s GPU: with dependent launches where the model bounds
    the design by its SMs, designs.with_trigger; the model's prediction), or None for a design it cannot budget."""
    p = problem
    prediction = designs.design_prediction(p.m, p.n, p.k, dtypes.as_dtype(p.dtype_name), p.device, params)
    return None if prediction is None else (designs.with_trigger(params, prediction), prediction)


def promoted_tall_tiles(found):
    """Of [(params, predicted seconds)], the 256-row tiles again loading with L2 promotion TALL_TILE_PROMOTION
    (predicted alike: the model does not see promotion)."""
    return [(dict(params, l2_promotion=TALL_TILE_PROMOTION), predicted_s) for params, predicted_s in found
            if params["tile_m"] == 256]


def _within_span(designs_found):
    """Of [(params, predicted seconds)], the pick first, each design once, those predicted within PREDICTED_SPAN of
    the pick."""
    found = []
    for params, predicted_s in designs_found:
        if params in [f for f, _ in found] or (found and predicted_s > PREDICTED_SPAN * found[0][1]):
            continue
        found.append((params, predicted_s))
    return found


def pick(problem, fused=None, block_scales=None):
    """The build() parameters of the model's pick for `problem` fusing `fused` and promoting with `block_scales`
    (what designs.choose or designs.choose_block_scaled returns)."""
    p = problem
    if block_scales is not None:
        return dict(designs.choose_block_scaled(p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms, block_scales))
    return dict(designs.choose(p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms, p.a_layout, p.b_layout,
                               fused=fused or False))


def swapped_tile(problem):
    """The build() parameters of designs.swapped_tile for `problem`; None at decode's M."""
    p = problem
    design = designs.swapped_tile(p.m, p.n, dtypes.as_dtype(p.dtype_name), p.num_sms, p.a_layout, p.b_layout)
    return None if design is None else dict(design, num_sms=p.num_sms, a_layout=p.a_layout, b_layout=p.b_layout)


def in_clusters(problem, params, size):
    """Design `params` in clusters of `size` blocks (1: plain) on `problem`'s GPU (designs.in_clusters; `tune_matmul`
    asks the driver for the clusters it holds and cuts the grid further where it holds fewer)."""
    return designs.in_clusters(params, size, problem.device, problem.num_sms)


def _multicast_can_help(problem, dtype, params):
    """True unless the model bounds design `params` (plain) by DRAM, where sharing tiles from L2 saves nothing:
    there (decode) 44 of run 60's 45 cluster trials ran slower than their plain twins, up to 3.2x their time, and one
    as fast (benchmarks/RESULTS.md run 60)."""
    p = problem
    prediction = designs.design_prediction(p.m, p.n, p.k, dtype, p.device, in_clusters(problem, params, 1))
    return prediction is not None and prediction.gemm.bound != "DRAM"


def tune_matmul(a, b, *, scale_a=None, scale_b=None, out_dtype=None, promote=False, top_k=TOP_K,
                cluster_sizes=CLUSTER_SIZES, rounds=ROUNDS, record=True):
    """Chooses tg.matmul's design for a @ b by timing candidates on the GPU the arrays live on, with their values.

        tuning = tg.tune_matmul(x, w.T)   # prints as a table: each design, predicted and measured
        y = tg.matmul(x, w.T)             # now runs tuning.best (this problem, this GPU; later processes too)

    The candidates (`candidates`) are the model's pick, the next `top_k` - 1 designs of its ranking, a swapped
    128-row tile, and the pick and that tile plain and in clusters of `cluster_sizes` blocks sharing a tile by TMA
    multicast, which the model ranks only roughly (clusters measured 0.66-1.26x their plain twins on ragged
    shapes, benchmarks/RESULTS.md runs 60 and 64). Each runs
    once with its output poisoned with NaN and checked against a float64 product of sampled rows and columns (a
    design that fails is not timed and says why); then all are timed, interleaved, over `rounds`. With `record`,
    the fastest becomes the design of every later tg.matmul call of this problem (shape, dtype, operand layouts,
    scales and out_dtype, GPU) without an epilogue function and unbatched, if it beat the model's pick by MARGIN;
    the record is kept in the tuning cache beside the compile cache ($TILEGEMM_CACHE_DIR, else ~/.cache/tilegemm)
    until the lowering, tilegemm.ops or CuTe DSL changes.

    a and b are 2-D device arrays (torch, cupy, jax, tg.runtime.DeviceArray) as tg.matmul takes them: f16 or bf16
    (row-major, or the transpose of a row-major array), or fp8 with `scale_a=`, `scale_b=`, `out_dtype=` and
    `promote=` as tg.matmul takes them (per-tensor and row-wise scales time the model's designs with the scales'
    epilogue; block scales and promote=True the block-scaled kernel's designs, 128 and 256 rows tall, those staging
    their scales at each ring depth from four, which the model cannot rank: four or five stages is faster by GPU,
    benchmarks/RESULTS.md runs 199-205; the 256-row ones also with L2 promotion, TALL_TILE_PROMOTION). Each
    candidate compiles once (seconds; cached).
    Returns the Tuning: its `trials` (the pick first), `best`, and `speedup` (the pick's time over the best's)."""
    call = _call(a, b, scale_a, scale_b, out_dtype, promote)
    sample = _sample(call)
    trials = [Trial(params, predicted) for params, predicted in candidates(call.problem, top_k, cluster_sizes,
                                                                             call.fused, call.block_scales)]
    for trial in trials:
        _prepare(trial, call, sample)
    pick = trials[0]
    p = call.problem
    if pick.reason is not None:
        raise TileGemmError(f"tg.tune_matmul: the model's pick for {p.m}x{p.n}x{p.k} failed its check "
                            f"({pick.reason}); nothing was recorded")
    _time([t for t in trials if t.reason is None], launch_stream(call.stored), rounds)
    best = chosen(trials)
    if record:
        tuned.record(p, best.params, best.measured_s, pick.measured_s)
        dispatch.forget_prepared()
    return Tuning(p, trials, best, record)


def chosen(trials):
    """Of measured trials (the model's pick first), the fastest of those that passed their check if it beat the pick
    by MARGIN, else the pick."""
    pick = trials[0]
    fastest = min((t for t in trials if t.reason is None), key=lambda t: t.measured_s)
    return fastest if fastest.measured_s < pick.measured_s * (1 - MARGIN) else pick


def _call(a, b, scale_a, scale_b, out_dtype, promote):
    """The dispatch.Call of tg.matmul(a, b, ...) on the current GPU; ArgumentError for what tuning does not take."""
    sa, sb = dispatch._spec(a, "a"), dispatch._spec(b, "b")
    dispatch.check_operands(sa, sb)
    if "numpy" in (library_of(a), library_of(b)):
        raise ArgumentError("tg.tune_matmul times the kernel on the GPU: pass device arrays (torch, cupy, jax, "
                            "tg.runtime.DeviceArray), not numpy arrays, whose copies would be timed too")
    scales = () if scale_a is None and scale_b is None else (scale_a, scale_b)
    return dispatch.resolve(a, b, sa, sb, scales, out_dtype=out_dtype, promote=promote)


def _sample(call):
    """(rows, cols, float64 result of those rows and columns of `call`: its operands' product, block scales applied
    to the operands and tilegemm's epilogue (scales, out_dtype) to the product) to check outputs against."""
    p = call.problem
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(p.m, min(SAMPLE, p.m), replace=False))
    cols = np.sort(rng.choice(p.n, min(SAMPLE, p.n), replace=False))
    a, b = (_host(x) for x in call.stored[:2])
    a = (a[rows] if p.a_layout == "mk" else a[:, rows].T).astype(np.float64)   # the sample only: an 8192^2 operand
    b = (b[:, cols] if p.b_layout == "kn" else b[cols].T).astype(np.float64)   # in float64 would take 512 MB
    if isinstance(call.block_scales, blockscaling.BlockScales):
        a, b = _block_scaled(call, a, b, rows, cols)
    product = a @ b
    if call.fused is not None:
        tiles = {name: _sampled(_host(x), shape, rows, cols, p.m, p.n)
                 for (name, shape, _), x in zip(call.fused.tensors, call.stored[2:])}
        product = call.fused.fn(product, **tiles)
    return rows, cols, product


def _block_scaled(call, a, b, rows, cols):
    """The sampled rows of a [rows, K] and columns of b [K, cols] (float64) times their block scales (stored after
    a and b in call.stored, row-major: scale_a [M, Kb] or its transpose, scale_b [Kb, Nb] or its transpose)."""
    scale_a, scale_b = (_host(x).astype(np.float64) for x in call.stored[2:4])
    scale_a = scale_a if call.block_scales.a_layout == "mk" else scale_a.T
    scale_b = scale_b if call.block_scales.b_layout == "kn" else scale_b.T
    k = a.shape[1]
    return (a * np.repeat(scale_a[rows], blockscaling.BLOCK, axis=1)[:, :k],
            b * np.repeat(scale_b[:, cols // blockscaling.BLOCK], blockscaling.BLOCK, axis=0)[:k])


def _sampled(x, shape, rows, cols, m, n):
    """The sampled rows and columns of epilogue tensor `x` (of `shape`, broadcast over the [m, n] result)."""
    along_rows, along_cols = fused_epilogue.varies(shape, m, n)
    x = np.asarray(x, np.float64)
    if len(shape) == 1:
        return x[cols]
    return x[rows if along_rows else slice(None)][:, cols if along_cols else slice(None)]


def _prepare(trial, call, sample):
    """Builds and runs one design of `call` with its output poisoned, checks the output against `sample`, and
    leaves its prepared launch (into that output) on the trial; a design that fails says why in trial.reason."""
    stored = call.stored
    try:
        design = call.build(tuple(sorted(trial.params.items())))
        out = design(*stored)
        prepared = design.prepared(readers.signature(stored), None)
        if prepared is None:
            raise TileGemmError("it left no prepared launch")
        prepared(stored, [out], True)    # NaN first: an element the kernel does not write stays NaN
    except (TileGemmError, ValueError) as e:   # a design the builder refuses is reported, not run
        trial.reason = failure(e)
        return
    rows, cols, reference = sample
    result = _host(out)[np.ix_(rows, cols)].astype(np.float64)
    trial.error = float(np.linalg.norm(result - reference) / max(np.linalg.norm(reference), 1e-30))
    if not np.all(np.isfinite(result)) or not trial.error <= TOLERANCE:
        trial.reason = f"its output differs from the float64 product by {trial.error:.1e} (allowed {TOLERANCE:.0e})"
        return
    trial.launch = lambda: prepared(stored, [out], False)


def failure(error):
    """Why a design failed, in a line: the error's type and first line, and the last later line naming an error (a
    CompileError's first line names the generated source; CuTe DSL's diagnosis follows, most specific last)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()] or [""]
    detail = next((line for line in reversed(lines[1:]) if "error" in line.lower()), None)
    return f"{type(error).__name__}: {lines[0]}" + (f" ({detail})" if detail else "")


def _time(trials, stream, rounds):
    """Sets each trial's measured_s: the median over `rounds` of its mean time per launch. Each round times the
    trials in a new shuffled order, each batch right after an untimed one of the model's pick (trials[0]), so that
    every design starts from the clocks and caches the same kernel leaves (as benchmarks/bench_hopper.py times)."""
    for t in trials:
        probe_ms = time_kernel(t.launch, warmup=1, iters=3, stream=stream)
        t.iters = max(3, min(200, int(ROUND_MS / max(probe_ms, 1e-3))))
    order = random.Random(0)
    for _ in range(rounds):
        for t in order.sample(trials, len(trials)):
            time_kernel(trials[0].launch, warmup=0, iters=trials[0].iters, stream=stream)
            t.samples.append(time_kernel(t.launch, warmup=0, iters=t.iters, stream=stream))
    for t in trials:
        t.measured_s = statistics.median(t.samples) / 1e3


def _host(x):
    """A numpy copy of a device array (torch, cupy, jax, DeviceArray)."""
    if isinstance(x, DeviceArray):
        return x.copy_to_host()
    if library_of(x) == "torch":
        from ..torch.host import to_numpy
        return to_numpy(x.detach().cpu())
    return np.asarray(x.get() if hasattr(x, "get") else x)
