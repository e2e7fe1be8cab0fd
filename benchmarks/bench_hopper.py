"""Hopper GEMM benchmark: the tilegemm ladder and flagship beside cuBLAS, Triton and Pallas.

Every contender multiplies the same iid-normal inputs in one process. Timing:
each contender's launches are captured in a CUDA graph (so Python launch
overhead is not measured) and replayed between CUDA events; contenders are
interleaved round by round in a new (seeded) random order each round, and the
median over rounds is reported, because clocks drift by several
percent within a run and a contender's time depends on the one before it. Results go
to OUT/bench-<date>.json, a markdown table and a PNG chart (when matplotlib is
present). Usage:

    python3 benchmarks/bench_hopper.py --quick --out out          # v4, flagship, tg.matmul at 8192^3, both dtypes
    python3 benchmarks/bench_hopper.py --ladder --out out         # every rung at 8192^3 (f16)
    python3 benchmarks/bench_hopper.py --suite --out out          # flagship and tg.matmul over the issue-5 shapes
    python3 benchmarks/bench_hopper.py --decode --out out         # tg.matmul(x, w.T) over the issue-12 decode grid
    python3 benchmarks/bench_hopper.py --shapes 3000x5000x2000,777x3000x1400 --out out   # tg.matmul on any shapes

--decode times x [M, K] @ w.T for a weight w [N, K] (tg.matmul(x, w.T) against torch.mm(x, w.t())) and, in the
same interleaving, a device-to-device copy of w; rows with M <= 64 report the bytes the problem must move per
second as a fraction of the copy's (read + written) bytes per second. tg.matmul is timed as the user calls it
(its prepared call, split-K's second pass included) inside the CUDA graph. Every kernel tg.matmul will run is
compiled first, in --jobs processes. The JSON's meta.summary holds the standing figures (benchmarks/decode_grid.py)
that benchmarks/standing.py --bench reads.
"""
import argparse
import datetime
import importlib.util
import os
import random
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import decode_grid  # noqa: E402
from peers import pallas_matmul, triton_matmul  # noqa: E402
from report import write_outputs  # noqa: E402

# The ladder runs as two jobs: interleaved with the 50-100 ms launches of the CUDA-core rungs, which draw little
# power, the tensor-core rungs ran at higher clocks and measured up to 8% faster against cuBLAS (RESULTS.md run 12).
LADDER_CUDA_CORES = ["hopper_v0_naive", "hopper_v1_smem"]
LADDER_TENSOR_CORES = ["hopper_v2_tma_wgmma", "hopper_v3_warp_specialized", "hopper_v4_tuned",
                       "hopper_flagship"]
SUITE = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 8192, 4096), (8192, 28672, 4096)]
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


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


def compile_design(m, n, k, dtype_name, a_layout, b_layout, target):
    """Compiles the kernels of tg.matmul's design for this problem and target into the compile cache (a worker
    process: no CUDA context needed)."""
    import time
    from tilegemm.ops import designs
    start = time.perf_counter()
    params = chosen_design(m, n, k, dtype_name, a_layout, b_layout, target)
    designs.build(m, n, k, dtype_name, tuple(sorted(params.items()))).compile()
    return f"{m}x{n}x{k} {dtype_name} {a_layout}/{b_layout}: {time.perf_counter() - start:.1f} s"


def precompile(problems, jobs, target):
    """Compiles every (m, n, k, dtype, a_layout, b_layout) problem's design in `jobs` processes first."""
    import concurrent.futures
    import multiprocessing
    import time
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")   # CuTe DSL's compiler does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        for problem, future in [(p, pool.submit(compile_design, *p, target)) for p in problems]:
            try:
                print(f"  compiled {future.result()}")
            except Exception as e:   # the timing run then reports the failure where it happens
                print(f"  compile failed for {problem}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    print(f"compiled {len(problems)} problem(s) in {time.perf_counter() - start:.1f} s")


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


def bench_shape(m, n, k, dtype_name, names, rounds, target_ms=200.0, builders=None, peers=True):
    """Benchmarks every contender on one shape; returns a list of result dicts. `builders` maps contender names
    to `build(m, n, k, dtype)` functions (default: the example of that name); "tg.matmul" is the user's call."""
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
            print(f"  {name}: not run ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
    for peer_name, peer in (("Triton", triton_matmul), ("Pallas", pallas_matmul)) if peers else ():
        try:
            made = peer.contender(a, b)
        except Exception as e:  # a peer failing (run 17: JAX's dlpack import) must not end the run
            print(f"  {peer_name}: not run ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
            continue
        if made is None:
            print(f"  {peer_name}: not installed or not runnable here")
        else:
            launchers[peer_name] = made
    return measure(launchers, ref, (m, n, k), dtype_name, rounds, target_ms)


def bench_decode(m, n, k, dtype_name, rounds, target_ms=200.0):
    """tg.matmul(x, w.T) against torch.mm(x, w.t()) for a weight w [N, K], and a device-to-device copy of w, in
    one interleaving; each matmul row carries `bw_fraction` (decode_grid.bandwidth_fraction)."""
    tdtype = TORCH_DTYPES[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=tdtype, generator=gen)
    w = torch.randn(n, k, device="cuda", dtype=tdtype, generator=gen)
    ref = torch.mm(x.float(), w.float().t())
    print(f"  tg.matmul chose {chosen_design(m, n, k, dtype_name, 'mk', 'nk')}")
    launchers = {"cuBLAS": cublas_contender(x, w.t()), "tg.matmul": matmul_contender(x, w.T)}
    copy = torch.empty_like(w)
    launchers["copy w (D2D)"] = ((lambda: copy.copy_(w)), None)
    rows = measure(launchers, ref, (m, n, k), dtype_name, rounds, target_ms)
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
    samples = {name: [] for name in timers}
    shuffle = random.Random(0)
    for r in range(rounds):
        # A new order every round: a contender's time depends on the clock and power state the one before it
        # left. Rotating a fixed order moved every contender through every position but kept its predecessor:
        # tg.matmul, always right after the flagship, measured 0.5-2.5% slower than that same binary (runs 12-15).
        order = list(timers)
        shuffle.shuffle(order)
        for name in order:
            timer, _, _, own_rounds = timers[name]
            if r < own_rounds:
                samples[name].append(timer.run_ms())
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
    p.add_argument("--rungs", nargs="*", default=None)
    p.add_argument("--no-peers", action="store_true", help="leave Triton and Pallas out")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jobs", type=int, default=os.cpu_count(), help="processes compiling tg.matmul's kernels first")
    p.add_argument("--out", default="out")
    args = p.parse_args()
    dtypes = ("float16", "bfloat16")
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
        jobs += [("decode", s, dt, ["tg.matmul"]) for dt in dtypes for s in decode_grid.decode_shapes()]
    if not jobs:
        p.error("choose --quick, --ladder, --suite, --decode and/or --shapes")
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds, inputs="iid normal",
                timing="CUDA graph replay between events, contenders interleaved in a random order per round, "
                       "median of rounds")
    precompile(sorted({(*shape, dt, *(("mk", "nk") if suite == "decode" else ("mk", "kn")))
                       for suite, shape, dt, names in jobs if "tg.matmul" in names}), args.jobs, gpu_target())
    rows = []
    for job, (suite, (m, n, k), dt, names) in enumerate(jobs):
        print(f"{suite}: {m}x{n}x{k} {dt}")
        if suite == "decode":
            measured = bench_decode(m, n, k, dt, args.rounds)
        else:
            measured = bench_shape(m, n, k, dt, names, args.rounds, peers=not args.no_peers and suite != "shapes")
        rows += [dict(r, job=job, suite=suite) for r in measured]
    meta["summary"] = decode_grid.summary(rows)
    print("standing figures: " + ", ".join(f"{key} {value:.4f}" for key, value in meta["summary"].items()))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + write_outputs(os.path.join(args.out, f"bench-{stamp}"), meta, rows))


if __name__ == "__main__":
    main()
