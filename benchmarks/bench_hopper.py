"""Hopper GEMM benchmark: the tilegemm ladder and flagship beside cuBLAS, Triton and Pallas.

Every contender multiplies the same iid-normal inputs in one process. Timing:
each contender's launches are captured in a CUDA graph (so Python launch
overhead is not measured) and replayed between CUDA events; contenders are
interleaved round by round in a new (seeded) random order each round, each timed
replay right after an untimed replay of cuBLAS's graph, and the median over rounds is
reported, because clocks drift by several percent within a run and a contender's time
depends on the kernel before it (RESULTS.md runs 12 and 39). Results go
to OUT/bench-<date>.json, a markdown table and a PNG chart (when matplotlib is
present). Usage:

    python3 benchmarks/bench_hopper.py --quick --out out          # v4, flagship, tg.matmul at 8192^3, both dtypes
    python3 benchmarks/bench_hopper.py --ladder --out out         # every rung at 8192^3 (f16)
    python3 benchmarks/bench_hopper.py --suite --out out          # flagship and tg.matmul over the issue-5 shapes
    python3 benchmarks/bench_hopper.py --decode --out out         # tg.matmul(x, w.T) over the issue-12 decode grid
    python3 benchmarks/bench_hopper.py --shapes 3000x5000x2000,777x3000x1400 --out out   # tg.matmul on any shapes
    python3 benchmarks/bench_hopper.py --decode --all-designs --out out   # and beside it its candidate designs (f16)
    python3 benchmarks/bench_hopper.py --shapes 777x3000x1400 --tuned --out out   # and what tg.tune_matmul picks
    python3 benchmarks/bench_hopper.py --decode --decode-m 16 128 --design tile_n=256,schedule=cooperative,cluster_m=2

--decode times x [M, K] @ w.T for a weight w [N, K] (tg.matmul(x, w.T) against torch.mm(x, w.t())) and, in the
same interleaving, a device-to-device copy of w; rows with M <= 64 report the bytes the problem must move per
second as a fraction of the copy's (read + written) bytes per second. tg.matmul is timed as the user calls it
(its prepared call, split-K's second pass included) inside the CUDA graph. Every kernel tg.matmul will run is
compiled first, in --jobs processes. The JSON's meta.summary holds the standing figures (benchmarks/decode_grid.py)
that benchmarks/standing.py --bench reads.

--all-designs (with --decode and/or --shapes) also times, per problem, the fastest-predicted design of each family
tg.matmul chooses among (benchmarks/design_contenders.py), each through its prepared call as tg.matmul runs its pick,
and puts the model's predicted time beside each measured one (predicted_us, measured_us, measured_over_predicted).
--design (repeatable) times a design of one's own the same way, beside tg.matmul's pick, on every problem of
--decode, --shapes and --suite (design_contenders.parse_design); --decode-m runs only those rows of the decode grid.

--tuned (with --decode, --shapes and/or --suite) also times "tg.matmul tuned": the design tg.tune_matmul measures
fastest on the job's operands (its candidates compiled first with the rest), through its prepared call; meta's
summary_tuned holds the standing figures of those rows.
"""
import argparse
import datetime
import importlib.util
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import decode_grid  # noqa: E402
import design_contenders  # noqa: E402
from peers import pallas_matmul, triton_matmul  # noqa: E402
from report import write_outputs  # noqa: E402
from rounds import interleaved  # noqa: E402

# The ladder runs as two jobs: interleaved with the 50-100 ms launches of the CUDA-core rungs, which draw little
# power, the tensor-core rungs ran at higher clocks and measured up to 8% faster against cuBLAS (RESULTS.md run 12).
LADDER_CUDA_CORES = ["hopper_v0_naive", "hopper_v1_smem"]
LADDER_TENSOR_CORES = ["hopper_v2_tma_wgmma", "hopper_v3_warp_specialized", "hopper_v4_tuned",
                       "hopper_flagship"]
SUITE = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 8192, 4096), (8192, 28672, 4096)]
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
TUNED = decode_grid.TUNED
TUNED_SUITES = ("decode", "shapes", "suite")


def load_example(name):
    path = os.path.join(ROOT, "examples", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def builder(name):
    """`build(m, n, k, dtype)` of an example name."""
    return load_example(name).build


def tilegemm_contender(build, m, n, k, dtype_name):
    """A zero-argument launcher of the compiled tilegemm kernel on torch buffers, and its output."""
    import tilegemm as tg
    from cuda.bindings import driver
    dtype = tg.lang.dtypes.as_dtype(dtype_name)
    kernel = build(m, n, k, dtype=dtype)
    compiled = kernel.lower(tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype), arch="sm_90a").compile()

    def bind(a, b):
        c = torch.empty(m, n, device="cuda", dtype=a.dtype)

        def launch():
            compiled(a.data_ptr(), b.data_ptr(), c.data_ptr(),
                     stream=driver.CUstream(torch.cuda.current_stream().cuda_stream))
        return launch, c
    return bind


def matmul_contender(a, b):
    """tg.matmul(a, b) as the user calls it, into a fixed output: the prepared call of the design it chose."""
    import tilegemm as tg
    c = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=a.dtype)
    tg.matmul(a, b, out=c)   # the general path: choose, compile, prepare
    return (lambda: tg.matmul(a, b, out=c)), c


def gpu_target():
    """(model device name, SM count) tg.matmul chooses its designs for on this GPU."""
    from tilegemm.ops import dispatch
    return dispatch._target(interpret=False)


def chosen_design(m, n, k, dtype_name, a_layout, b_layout, target=None):
    """The parameters of the design tg.matmul runs for this problem on this GPU (or on `target`)."""
    from tilegemm.ops.dispatch import choose_config
    return dict(choose_config(m, n, k, dtype_name, *(target or gpu_target()), a_layout, b_layout))


def tuning_candidates(shape, dtype_name, suite, target):
    """The build() parameters tg.tune_matmul times for a job (before cutting cluster grids to what the GPU holds)."""
    from tilegemm.ops import tuned, tuning
    problem = tuned.Problem(*shape, dtype_name, *target, *layouts(suite))
    return [params for params, _ in tuning.candidates(problem)]


def layouts(suite):
    """(a_layout, b_layout) of a suite's problems: decode multiplies x by a weight stored [N, K]."""
    return ("mk", "nk") if suite == "decode" else ("mk", "kn")


def compile_design(m, n, k, dtype_name, params):
    """Compiles the kernels of design `params` (build() items) for this problem into the compile cache (a worker
    process: no CUDA context needed)."""
    import time
    from tilegemm.ops import designs
    start = time.perf_counter()
    designs.build(m, n, k, dtype_name, params).compile()
    return f"{m}x{n}x{k} {dtype_name} {dict(params)}: {time.perf_counter() - start:.1f} s"


def precompile(problems, jobs):
    """Compiles every (m, n, k, dtype, params) design in `jobs` processes first."""
    import concurrent.futures
    import multiprocessing
    import time
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")   # CuTe DSL's compiler does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        for problem, future in [(p, pool.submit(compile_design, *p)) for p in problems]:
            try:
                print(f"  compiled {future.result()}")
            except Exception as e:   # the timing run then reports the failure where it happens
                print(f"  compile failed for {problem}: {failure(e)}")
    print(f"compiled {len(problems)} design(s) in {time.perf_counter() - start:.1f} s")


def expected_designs(shape, dtype_name, suite, target, per_family):
    """design_contenders.contenders() of one problem: the designs --all-designs times and their predictions."""
    from tilegemm.ops import designs
    pick = chosen_design(*shape, dtype_name, *layouts(suite), target)
    ranked = designs.predictions(*shape, dtype_name, *target, *layouts(suite))
    return design_contenders.contenders(ranked, pick, per_family)


def design_contender(m, n, k, dtype_name, params, stored):
    """A zero-argument launcher of design `params` on the operands as stored, into a fixed output, through its
    prepared call (split-K's second pass included) as tg.matmul runs its pick; and that output."""
    from tilegemm import debug
    from tilegemm.ops import designs
    from tilegemm.runtime import readers
    kernel = designs.build(m, n, k, dtype_name, tuple(sorted(params.items())))
    c = torch.empty(m, n, device="cuda", dtype=stored[0].dtype)
    switches = debug.resolve(None)
    kernel(*stored, out=c)
    prepared = kernel.prepared(readers.signature(stored), switches.barrier_timeout)
    if prepared is None:
        raise RuntimeError("the design left no prepared launch")
    return (lambda: prepared(stored, [c], switches.poison_outputs)), c


def design_launchers(m, n, k, dtype_name, expected, stored):
    """Launchers of the designs in `expected` (design_contenders.contenders(), tg.matmul's entry aside); a design
    that fails to build or run is reported and left out."""
    launchers = {}
    for name, design in expected.items():
        if name == design_contenders.PICK:
            continue
        try:
            launchers[name] = design_contender(m, n, k, dtype_name, design["params"], stored)
        except Exception as e:
            print(f"  {name}: not run ({failure(e)})")
    return launchers


def failure(e):
    """An exception in one line: its type and the start of its message."""
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def cublas_contender(a, b):
    c = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=a.dtype)
    return (lambda: torch.mm(a, b, out=c)), c


class Timer:
    """Times one launcher: CUDA-graph replay of `iters` launches between events (plain loop if capture fails)."""

    def __init__(self, launch, iters):
        self.launch, self.iters, self.graph = launch, iters, None
        launch()
        torch.cuda.synchronize()
        if not getattr(launch, "capturable", True):
            return
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(iters):
                    launch()
            self.graph = g
        except Exception as e:  # capture unsupported: fall back, and say so in the results
            print(f"  (CUDA graph capture failed: {type(e).__name__}: {e}; timing a plain loop)")
            torch.cuda.synchronize()

    def run_ms(self):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if self.graph is not None:
            self.graph.replay()
        else:
            for _ in range(self.iters):
                self.launch()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / self.iters


def relative_error(c, ref):
    c, ref = c.double(), ref.double()
    return float(torch.linalg.norm(c - ref) / torch.linalg.norm(ref))


def bench_shape(m, n, k, dtype_name, names, rounds, target_ms=200.0, builders=None, peers=True, expected=None,
                tuned=False):
    """Benchmarks every contender on one shape; returns a list of result dicts. `builders` maps contender names
    to `build(m, n, k, dtype)` functions (default: the example of that name); "tg.matmul" is the user's call;
    `expected` (design_contenders.contenders()) adds tg.matmul's candidate designs and the model's predictions;
    `tuned` adds TUNED, the design tg.tune_matmul measures fastest on these operands."""
    tdtype = TORCH_DTYPES[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=tdtype, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=tdtype, generator=gen)
    ref = torch.mm(a.float(), b.float())
    launchers = {"cuBLAS": cublas_contender(a, b)}
    for name in names:
        try:
            if name == "tg.matmul":
                print(f"  tg.matmul chose {chosen_design(m, n, k, dtype_name, 'mk', 'kn')}")
                launchers[name] = matmul_contender(a, b)
                continue
            build = (builders or {}).get(name) or builder(name)
            launchers[name] = tilegemm_contender(build, m, n, k, dtype_name)(a, b)
        except Exception as e:
            print(f"  {name}: not run ({failure(e)})")
    launchers.update(design_launchers(m, n, k, dtype_name, expected or {}, (a, b)))
    chosen = tuned_contender(a, b, dtype_name, launchers) if tuned else None
    for peer_name, peer in (("Triton", triton_matmul), ("Pallas", pallas_matmul)) if peers else ():
        try:
            made = peer.contender(a, b)
        except Exception as e:  # a peer failing (run 17: JAX's dlpack import) must not end the run
            print(f"  {peer_name}: not run ({failure(e)})")
            continue
        if made is None:
            print(f"  {peer_name}: not installed or not runnable here")
        else:
            launchers[peer_name] = made
    return with_tuned_design(design_contenders.annotate(measure(launchers, ref, (m, n, k), dtype_name, rounds,
                                                                target_ms), expected or {}), chosen)


def tuned_contender(a, b, dtype_name, launchers):
    """Adds TUNED to `launchers`: the design tg.tune_matmul(a, b) measures fastest (not recorded: tg.matmul keeps
    the model's pick), run through its prepared launch as tg.matmul runs a design; returns that design's label."""
    import tilegemm as tg
    from tilegemm.ops import designs, dispatch
    tuning = tg.tune_matmul(a, b, record=False)
    print("  " + repr(tuning).replace("\n", "\n  "))
    params = tuning.best.params
    stored = dispatch.stored_operands(a, b, params["a_layout"], params["b_layout"])
    launchers[TUNED] = design_contender(a.shape[0], b.shape[1], a.shape[1], dtype_name, params, stored)
    return designs.label(params)


def with_tuned_design(rows, label):
    """The rows, TUNED's carrying the label of its design."""
    return [dict(r, design=label) if r["contender"] == TUNED else r for r in rows]


def bench_decode(m, n, k, dtype_name, rounds, target_ms=200.0, expected=None, tuned=False):
    """tg.matmul(x, w.T) against torch.mm(x, w.t()) for a weight w [N, K], and a device-to-device copy of w, in
    one interleaving; each matmul row carries `bw_fraction` (decode_grid.bandwidth_fraction). `expected`
    (design_contenders.contenders()) adds tg.matmul's candidate designs and the model's predictions; `tuned` adds
    TUNED."""
    tdtype = TORCH_DTYPES[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=tdtype, generator=gen)
    w = torch.randn(n, k, device="cuda", dtype=tdtype, generator=gen)
    ref = torch.mm(x.float(), w.float().t())
    print(f"  tg.matmul chose {chosen_design(m, n, k, dtype_name, 'mk', 'nk')}")
    launchers = {"cuBLAS": cublas_contender(x, w.t()), "tg.matmul": matmul_contender(x, w.T)}
    launchers.update(design_launchers(m, n, k, dtype_name, expected or {}, (x, w)))
    chosen = tuned_contender(x, w.T, dtype_name, launchers) if tuned else None
    copy = torch.empty_like(w)
    launchers["copy w (D2D)"] = ((lambda: copy.copy_(w)), None)
    rows = with_tuned_design(design_contenders.annotate(measure(launchers, ref, (m, n, k), dtype_name, rounds,
                                                                target_ms), expected or {}), chosen)
    copy_row = next(r for r in rows if r["contender"] == "copy w (D2D)")
    copy_bytes = 2 * w.numel() * w.element_size()          # read and written
    copy_row["copy_gbps"] = copy_bytes / copy_row["ms"] / 1e6
    for r in rows:
        if r["contender"] != "copy w (D2D)":
            r["bw_fraction"] = decode_grid.bandwidth_fraction(m, n, k, dtype_name, r["ms"], copy_bytes,
                                                              copy_row["ms"])
            print(f"  {r['contender']:28s} moves {r['bw_fraction']:.1%} of the copy's bytes per second "
                  f"({copy_row['copy_gbps']:.0f} GB/s)")
    return rows


def measure(launchers, ref, shape, dtype_name, rounds, target_ms):
    """Times every launcher (name -> (launch, output or None)) interleaved, in a random order per round; one row
    per launcher, with its ratio to cuBLAS and its output's error against `ref`."""
    m, n, k = shape
    timers = {}
    for name, (launch, out) in launchers.items():
        launch()
        torch.cuda.synchronize()
        err = relative_error(out, ref) if out is not None else float("nan")
        probe = Timer(launch, 1).run_ms()
        iters = max(1, min(100, int(target_ms / max(probe, 1e-3) / rounds)))
        own_rounds = rounds if probe < 100 else max(2, min(rounds, int(3000 / probe)))  # slow rungs: fewer
        timers[name] = (Timer(launch, iters), err, iters, own_rounds)
    def time_one(name, r):
        # A random order (rounds.py) still left two contenders running one kernel 4-8% apart (runs 37-38), so every
        # timed replay follows the same untimed one, cuBLAS's: each contender starts from the state it leaves.
        timer, _, _, own_rounds = timers[name]
        if r >= own_rounds:
            return None
        timers["cuBLAS"][0].run_ms()
        return timer.run_ms()
    samples = interleaved(timers, rounds, time_one)
    flops = 2.0 * m * n * k
    cublas_ms = statistics.median(samples["cuBLAS"])
    rows = []
    for name, (timer, err, iters, own_rounds) in timers.items():
        ms = statistics.median(samples[name])
        rows.append(dict(contender=name, m=m, n=n, k=k, dtype=dtype_name, ms=ms, tflops=flops / ms / 1e9,
                         vs_cublas=cublas_ms / ms, rel_error=err, rounds=own_rounds, iters_per_round=iters,
                         graph_replay=timer.graph is not None,
                         spread_pct=100 * (max(samples[name]) - min(samples[name])) / ms))
        print(f"  {name:28s} {ms:9.4f} ms {flops / ms / 1e9:7.1f} TFLOP/s  {cublas_ms / ms:6.3f}x cuBLAS  "
              f"err {err:.1e}")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="flagship and v4 at 8192^3, f16 and bf16")
    p.add_argument("--ladder", action="store_true",
                   help="every rung at 8192^3 f16 (CUDA-core and tensor-core rungs as two jobs)")
    p.add_argument("--suite", action="store_true", help="flagship over the issue-5 shape suite, both dtypes")
    p.add_argument("--decode", action="store_true",
                   help="tg.matmul(x, w.T) over the decode grid (M 1-128 against three weights), both dtypes")
    p.add_argument("--shapes", type=decode_grid.parse_shapes, default=None, metavar="MxNxK,...",
                   help="tg.matmul against cuBLAS on these shapes, both dtypes (e.g. the ragged ones)")
    p.add_argument("--all-designs", action="store_true",
                   help="with --decode/--shapes: also time the fastest-predicted design of each family tg.matmul "
                        "chooses among, beside the model's predicted times (f16 unless --dtypes)")
    p.add_argument("--per-family", type=int, default=1, help="--all-designs: designs timed per family")
    p.add_argument("--design", action="append", type=design_contenders.parse_design, default=[],
                   metavar="NAME=VALUE,...",
                   help="with --decode/--shapes/--suite: also time this design (e.g. tile_m=128,tile_n=256,"
                        "schedule=cooperative,cluster_m=2) beside tg.matmul's pick, with the model's prediction; "
                        "repeatable")
    p.add_argument("--decode-m", type=int, nargs="+", default=list(decode_grid.DECODE_M), metavar="M",
                   help=f"--decode: the rows of M it runs (default {' '.join(map(str, decode_grid.DECODE_M))})")
    p.add_argument("--tuned", action="store_true",
                   help=f"with --decode/--shapes/--suite: also time {TUNED!r}, the design tg.tune_matmul measures "
                        "fastest (the tuning's own timing printed; not recorded)")
    p.add_argument("--dtypes", nargs="+", choices=list(TORCH_DTYPES), default=None,
                   help="dtypes of --quick, --suite, --decode, --shapes (default both; float16 with --all-designs)")
    p.add_argument("--rungs", nargs="*", default=None)
    p.add_argument("--no-peers", action="store_true", help="leave Triton and Pallas out")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="processes compiling tg.matmul's kernels first")
    p.add_argument("--out", default="out")
    args = p.parse_args()
    if args.all_designs and not (args.decode or args.shapes):
        p.error("--all-designs times the designs of --decode and/or --shapes: give one of them")
    dtypes = args.dtypes or (("float16",) if args.all_designs else tuple(TORCH_DTYPES))
    jobs = []   # (suite, (m, n, k), dtype, contender names)
    if args.quick:
        jobs += [("quick", (8192, 8192, 8192), dt, args.rungs or ["hopper_v4_tuned", "hopper_flagship", "tg.matmul"])
                 for dt in dtypes]
    if args.ladder:
        jobs += [("ladder", (8192, 8192, 8192), "float16", rungs) for rungs in
                 ([args.rungs] if args.rungs else [LADDER_CUDA_CORES, LADDER_TENSOR_CORES])]
    if args.suite:
        jobs += [("suite", s, dt, args.rungs or ["hopper_flagship", "tg.matmul"]) for dt in dtypes for s in SUITE]
    if args.shapes:
        jobs += [("shapes", s, dt, ["tg.matmul"]) for dt in dtypes for s in args.shapes]
    if args.decode:
        jobs += [("decode", s, dt, ["tg.matmul"]) for dt in dtypes for s in decode_grid.decode_shapes(args.decode_m)]
    if not jobs:
        p.error("choose --quick, --ladder, --suite, --decode and/or --shapes")
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds, inputs="iid normal",
                timing="CUDA graph replay between events, contenders interleaved in a random order per round, "
                       "median of rounds")
    target = gpu_target()
    expected = {job: expected_designs(shape, dt, suite, target, args.per_family)
                for job, (suite, shape, dt, names) in enumerate(jobs)
                if args.all_designs and suite in ("decode", "shapes")}
    for job, (suite, shape, dt, names) in enumerate(jobs):
        if args.design and suite in ("decode", "shapes", "suite"):
            pick = chosen_design(*shape, dt, *layouts(suite), target)
            expected[job] = {**expected.get(job, {}), **design_contenders.given(args.design, *shape, dt, *target,
                                                                                 *layouts(suite), pick)}
    picks = {(*shape, dt, tuple(sorted(chosen_design(*shape, dt, *layouts(suite), target).items())))
             for suite, shape, dt, names in jobs if "tg.matmul" in names}
    timed = {(*jobs[job][1], jobs[job][2], tuple(sorted(design["params"].items())))
             for job, candidates in expected.items() for design in candidates.values()}
    if args.tuned:
        timed |= {(*shape, dt, tuple(sorted(params.items()))) for suite, shape, dt, names in jobs
                  if suite in TUNED_SUITES for params in tuning_candidates(shape, dt, suite, target)}
    precompile(sorted(picks | timed, key=str), args.jobs)
    rows = []
    for job, (suite, (m, n, k), dt, names) in enumerate(jobs):
        print(f"{suite}: {m}x{n}x{k} {dt}")
        tuned = args.tuned and suite in TUNED_SUITES
        if suite == "decode":
            measured = bench_decode(m, n, k, dt, args.rounds, expected=expected.get(job), tuned=tuned)
        else:
            measured = bench_shape(m, n, k, dt, names, args.rounds, peers=not args.no_peers and suite != "shapes",
                                   expected=expected.get(job), tuned=tuned)
        rows += [dict(r, job=job, suite=suite) for r in measured]
    meta["summary"] = decode_grid.summary(rows)
    print("standing figures: " + ", ".join(f"{key} {value:.4f}" for key, value in meta["summary"].items()))
    if args.tuned:
        meta["summary_tuned"] = decode_grid.summary(rows, TUNED)
        print(f"{TUNED}: " + ", ".join(f"{key} {value:.4f}" for key, value in meta["summary_tuned"].items()))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + write_outputs(os.path.join(args.out, f"bench-{stamp}"), meta, rows))


if __name__ == "__main__":
    main()
