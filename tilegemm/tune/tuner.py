"""`tg.tune`: search a space of kernel parameters, ranked by the performance model, measured at the top.

    result = tune(build, (8192, 8192, 8192), {"tile_n": [128, 256], "stages": [3, 4, 5]},
                  measure=GpuTimer((8192, 8192, 8192)))   # measure(kernel, params) -> seconds
    print(result)                             # the ranking; result.best.params

Every candidate is built and traced (cheap, no compilation); those the
builder (ValueError), the verifier (tg.KernelError) or the model (a budget
over the device's limits) rejects are dropped with their reason. The rest
are ranked by predicted time.
Only the `top_k` best predicted are handed to `measure`, which compiles and
times them; measured times are cached on disk by device and graph fingerprint
and reused. Without `measure` the result is the model's ranking, marked as
predicted.
"""
import itertools

from ..errors import KernelError, TileGemmError
from ..lang import dtypes
from ..model import budget, get_device
from ..model.layouts import operand_specs
from .cache import ResultCache
from .progress import stderr_progress
from .result import CACHED, FAILED, ILLEGAL, MEASURED, Candidate, TuneResult, rank_key


def tune(build, shape, space, *, dtype=dtypes.float16, device="h200", top_k=5, measure=None, cache_dir=None,
         progress=True, layouts=("mk", "kn")):
    """Tunes `build(m, n, k, dtype, **params) -> Kernel` over the cartesian product of `space` (name -> values).

    Candidates are traced with A and B stored as `layouts` says (tilegemm.model.layouts: A [M, K] or [K, M],
    B [K, N] or [N, K]); a builder of kernels for other layouts takes them as parameters of its own.

    `measure(kernel, params) -> seconds` times one kernel (e.g. on the GPU); it is
    called for at most `top_k` candidates. `progress` is True (a progress bar on stderr
    where tqdm is installed, else lines: tune/progress.py), a callable taking each
    line, or False.
    """
    dev = get_device(device)
    m, n, k = (int(d) for d in shape)
    dt = dtypes.as_dtype(dtype)
    report = _reporter(progress)
    names = list(space)
    points = [dict(zip(names, values)) for values in itertools.product(*(space[name] for name in names))]
    if not points:
        raise ValueError("the tuning space is empty: give at least one value for every parameter")
    specs = operand_specs(m, n, k, dt, *layouts)

    candidates = []
    for i, params in enumerate(points, 1):
        cand = _evaluate(build, params, (m, n, k), dt, specs, dev)
        candidates.append(cand)
        if cand.status == ILLEGAL:
            report(f"[tune {i}/{len(points)}] {cand.describe()}: illegal, {cand.reason.splitlines()[0]}")
        else:
            report(f"[tune {i}/{len(points)}] {cand.describe()}: predicted {cand.predicted_s * 1e3:.3f} ms "
                   f"({cand.budget.predicted_tflops:.1f} TFLOP/s, {cand.budget.bound}-bound)")

    legal = sorted((c for c in candidates if c.status != ILLEGAL), key=rank_key)
    if not legal:
        raise KernelError(f"none of the {len(points)} candidates is legal on {dev.name}; the first was rejected "
                          f"because: {candidates[0].reason}")
    report(f"[tune] {len(legal)} legal of {len(points)}; best predicted: {legal[0].describe()}")
    if measure is None:
        return TuneResult((m, n, k), dev, candidates, legal[0], measured=False)

    cache = ResultCache(cache_dir)
    top = legal[:top_k]
    for i, cand in enumerate(top, 1):
        _measure(cand, measure, cache, dev, (m, n, k))
        what = f"{cand.measured_s * 1e3:.3f} ms ({cand.status})" if cand.measured_s is not None else \
            f"failed: {cand.reason.splitlines()[0]}"
        report(f"[tune measure {i}/{len(top)}] {cand.describe()}: {what}")
    timed = [c for c in top if c.measured_s is not None]
    if not timed:
        report("[tune] every measurement failed; returning the model's favourite (predicted, not measured)")
        return TuneResult((m, n, k), dev, candidates, legal[0], measured=False)
    best = min(timed, key=lambda c: c.measured_s)
    report(f"[tune] best measured: {best.describe()} {best.measured_s * 1e3:.3f} ms")
    return TuneResult((m, n, k), dev, candidates, best, measured=True)


def _evaluate(build, params, shape, dtype, specs, dev):
    """Builds, traces (the verifier runs) and budgets one point; illegal ones carry the reason."""
    cand = Candidate(dict(params))
    m, n, k = shape
    try:
        cand.kernel = build(m, n, k, dtype, **params)
        cand.graph = cand.kernel.trace(*specs)
    except (KernelError, ValueError) as e:  # the verifier's verdict, or the builder refusing its parameters
        cand.status, cand.reason = ILLEGAL, str(e)
        return cand
    cand.budget = budget(cand.graph, device=dev)
    if not cand.budget.legal:
        cand.status, cand.reason = ILLEGAL, "; ".join(cand.budget.problems)
    return cand


def _measure(cand, measure, cache, dev, shape):
    """Times one candidate, from the cache when the same graph was measured on this device before."""
    key = ResultCache.key(dev, cand.graph.fingerprint())
    record = cache.get(key)
    if record is not None:
        cand.status, cand.measured_s = CACHED, record["seconds"]
        return
    try:
        seconds = float(measure(cand.kernel, dict(cand.params)))
    except TileGemmError as e:
        cand.status, cand.reason = FAILED, str(e)
        return
    cand.status, cand.measured_s = MEASURED, seconds
    cache.put(key, {"seconds": seconds, "params": _jsonable(cand.params), "shape": list(shape)})


def _jsonable(params):
    return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)) for k, v in params.items()}


def _reporter(progress):
    if callable(progress):
        return progress
    if progress:
        return stderr_progress()
    return lambda line: None
