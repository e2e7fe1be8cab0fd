"""The call a user makes: `tg.matmul` in a plain Python loop beside `torch.mm`, and the bare kernel beside cuBLAS.

For each shape, in one process on the same iid-normal torch tensors:

* kernel rows: the kernel tg.matmul chose, launched through its compiled binary and
  captured in a CUDA graph, against torch.mm captured the same way (no host time);
* user-call rows: `tg.matmul(a, b)` (a fresh output each call, as a user writes it)
  in a plain Python loop between CUDA events, against the same loop of `torch.mm(a, b)`.
  Also `tg.matmul(x, w.T)` against `torch.mm(x, w.T)` for a weight stored [N, K].

Contenders are interleaved in a random order per round; medians of rounds.
Host overhead: on a problem whose kernel takes a few microseconds, the wall time of
a loop of calls (synchronised once at the end) per call, minus the kernel's own time
(graph replay), for tg.matmul and for torch.mm; plus the parts of one tg.matmul call.

    python3 benchmarks/bench_calls.py --out out [--shapes 2048x2048x2048 ...] [--dtypes float16 bfloat16]
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import tilegemm as tg  # noqa: E402
from tilegemm.ops import dispatch  # noqa: E402
from tilegemm.runtime import readers  # noqa: E402
from rounds import interleaved, loop_iterations, loop_ms  # noqa: E402

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (4096, 8192, 4096), (8192, 8192, 8192), (128, 8192, 8192)]
TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
OVERHEAD_SHAPE = (128, 128, 64)


def parse_shape(text):
    m, n, k = (int(x) for x in text.lower().split("x"))
    return m, n, k


def graph_of(fn, iters):
    """A function replaying a CUDA graph of `iters` calls of fn() (it keeps fn, and what fn writes, alive)."""
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()

    def replay():
        g.replay()
    replay.captured = fn
    return replay


def chosen_kernel_launch(a, b):
    """A zero-argument launcher of the compiled kernel tg.matmul chose for (a, b), writing a fixed output."""
    m, k = a.shape
    n = b.shape[1]
    prepared = dispatch._prepared[(readers.signature((a, b)), None)]
    c = torch.empty(m, n, device="cuda", dtype=a.dtype)
    pointers = [a.data_ptr(), b.data_ptr(), c.data_ptr()]

    def launch():
        prepared.launcher(pointers, torch.cuda.current_stream().cuda_stream)
    launch.output = c   # keeps the output alive as long as the launcher that writes it
    return launch


def bench_shape(m, n, k, dtype_name, rounds, transposed_weight):
    dt = TORCH_DTYPES[dtype_name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=dt, generator=gen)
    b = torch.randn(k, n, device="cuda", dtype=dt, generator=gen)
    ref = torch.mm(a.float(), b.float())
    c = tg.matmul(a, b)
    torch.cuda.synchronize()
    err = float(torch.linalg.norm(c.float() - ref) / torch.linalg.norm(ref))
    flops = 2.0 * m * n * k
    iters = loop_iterations(lambda: torch.mm(a, b), budget_ms=75)
    contenders = {
        "kernel: tg.matmul's kernel (graph)": graph_of(chosen_kernel_launch(a, b), iters),
        "kernel: cuBLAS (graph)": graph_of(lambda: torch.mm(a, b), iters),
    }
    loops = {"call: tg.matmul(a, b)": lambda: tg.matmul(a, b), "call: torch.mm(a, b)": lambda: torch.mm(a, b)}
    if transposed_weight:
        w = torch.randn(n, k, device="cuda", dtype=dt, generator=gen)
        loops["call: tg.matmul(a, w.T)"] = lambda: tg.matmul(a, w.T)
        loops["call: torch.mm(a, w.T)"] = lambda: torch.mm(a, w.T)
        tg.matmul(a, w.T)
    def time_one(name, _):   # a graph replay holds `iters` calls; a loop makes them
        return loop_ms(contenders[name], 1) / iters if name in contenders else loop_ms(loops[name], iters)
    samples = interleaved(list(contenders) + list(loops), rounds, time_one)
    med = {name: statistics.median(s) for name, s in samples.items()}
    rows = []
    for name, ms in med.items():
        ref_name = {"kernel: tg.matmul's kernel (graph)": "kernel: cuBLAS (graph)",
                    "call: tg.matmul(a, b)": "call: torch.mm(a, b)",
                    "call: tg.matmul(a, w.T)": "call: torch.mm(a, w.T)"}.get(name, name)
        rows.append(dict(contender=name, m=m, n=n, k=k, dtype=dtype_name, ms=ms, tflops=flops / ms / 1e9,
                         vs_reference=med[ref_name] / ms, reference=ref_name, rel_error=err, rounds=rounds,
                         iters_per_round=iters,
                         spread_pct=100 * (max(samples[name]) - min(samples[name])) / ms))
        print(f"  {name:36s} {ms:9.4f} ms {flops / ms / 1e9:7.1f} TFLOP/s  {med[ref_name] / ms:6.3f}x "
              f"{ref_name}")
    return rows


def host_overhead(dtype_name, calls=3000):
    """Per-call host cost of tg.matmul and torch.mm on a problem whose kernel takes a few microseconds."""
    m, n, k = OVERHEAD_SHAPE
    dt = TORCH_DTYPES[dtype_name]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    tg.matmul(a, b)
    torch.cuda.synchronize()
    kernel_graph = graph_of(chosen_kernel_launch(a, b), 100)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    kernel_graph()
    end.record()
    end.synchronize()
    kernel_us = start.elapsed_time(end) * 1e3 / 100

    def wall_us(fn):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / calls * 1e6

    from tilegemm import debug
    from tilegemm.runtime.launch import enter_context
    prepared = dispatch._prepared[(readers.signature((a, b)), None)]
    c = torch.empty(m, n, device="cuda", dtype=dt)
    stream = torch.cuda.current_stream().cuda_stream
    pointers = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    where = torch.device("cuda", 0)
    parts = {
        "tg.matmul(a, b)": wall_us(lambda: tg.matmul(a, b)),
        "tg.matmul(a, b, out=c)": wall_us(lambda: tg.matmul(a, b, out=c)),
        "torch.mm(a, b)": wall_us(lambda: torch.mm(a, b)),
        "part: launcher alone (pointers ready)": wall_us(lambda: prepared.launcher(pointers, stream)),
        "part: signature of (a, b)": wall_us(lambda: readers.signature((a, b))),
        "part: torch.empty((m, n), dtype=, device=torch.device)": wall_us(
            lambda: torch.empty((m, n), dtype=dt, device=where)),
        "part: a.new_empty((m, n))": wall_us(lambda: a.new_empty((m, n))),
        "part: torch.empty(m, n, dtype=, device=int)": wall_us(lambda: torch.empty(m, n, dtype=dt, device=0)),
        "part: torch.empty((m, n), dtype=, device=int) (tilegemm's)": wall_us(
            lambda: torch.empty((m, n), dtype=dt, device=where.index)),
        "part: torch.empty_strided((m, n), (n, 1), dtype=, device=)": wall_us(
            lambda: torch.empty_strided((m, n), (n, 1), dtype=dt, device=where)),
        "part: torch's current stream (raw)": wall_us(prepared.current_stream),
        "part: the GPU's context made current (cuda check)": wall_us(lambda: enter_context(0)),
        "part: the GPU is torch's current one (check)": wall_us(prepared.is_current),
        "part: debug switches resolved": wall_us(lambda: debug.resolve(None)),
        "part: pointers of (a, b)": wall_us(lambda: (a.data_ptr(), b.data_ptr())),
    }
    for name, us in parts.items():
        print(f"  {name:40s} {us:8.2f} us/call  ({1e6 / us:9.0f} calls/s)")
    overhead = parts["tg.matmul(a, b)"] - kernel_us
    print(f"  kernel alone (graph replay) {kernel_us:.2f} us; tg.matmul host overhead above it: {overhead:.2f} us")
    return dict(shape=OVERHEAD_SHAPE, dtype=dtype_name, kernel_us=kernel_us, wall_us_per_call=parts,
                call_overhead_us=overhead, calls_per_second=1e6 / parts["tg.matmul(a, b)"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", type=parse_shape, default=SHAPES)
    p.add_argument("--dtypes", nargs="*", default=["float16"])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--transposed-weight-at", type=parse_shape, default=(8192, 8192, 8192),
                   help="the shape at which tg.matmul(x, w.T) is also measured")
    p.add_argument("--out", default="out")
    args = p.parse_args()
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds, inputs="iid normal",
                timing="kernel rows: CUDA graph replay between events; call rows: a plain Python loop between "
                       "events; contenders in a random order per round; medians of rounds")
    rows = []
    for dt in args.dtypes:
        for shape in args.shapes:
            print(f"{'x'.join(map(str, shape))} {dt}")
            rows += bench_shape(*shape, dt, args.rounds, shape == args.transposed_weight_at)
    print("host overhead")
    overhead = host_overhead(args.dtypes[0])
    os.makedirs(args.out, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(args.out, f"calls-{stamp}.json")
    with open(path, "w") as f:
        json.dump(dict(meta=meta, rows=rows, host_overhead=overhead), f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
