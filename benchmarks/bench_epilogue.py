"""A fused epilogue in one call: `tg.matmul(a, b, epilogue=fn, bias=bias)` beside torch.mm followed by the same
torch ops, and beside torch.compile of that torch function.

For each shape and epilogue, in one process on the same iid-normal f16 torch tensors:

* "fused: tg.matmul(..., epilogue=)": the epilogue runs in the flagship's epilogue, on
  the f32 accumulator, before the one f16 store;
* "torch: mm + ops": torch.mm(a, b) then the epilogue as torch ops (f16 tensors, as a
  model would run them);
* "torch.compile: mm + ops": torch.compile of that torch function (default mode).

Each contender is called in a plain Python loop between CUDA events (a fresh output
per call, as a user writes it); contenders interleaved in a random order per round;
medians of rounds. Every contender's output is checked against float32 torch first;
a fused result off by more than 1e-2 (relative Frobenius) fails the run.

    python3 benchmarks/bench_epilogue.py --out out [--shapes 4096x4096x4096 8192x8192x8192] [--rounds 7]

The JSON report's summary holds fused_epilogue_ratio_<size> (torch mm + ops over the fused call) and
fused_vs_compile_ratio_<size> (torch.compile over the fused call) for square sizes: above 1, the fused call wins.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tilegemm as tg  # noqa: E402
from rounds import interleaved, loop_iterations, loop_ms  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
SQRT_HALF = 1 / math.sqrt(2)
FUSED, EAGER, COMPILED = "fused: tg.matmul(..., epilogue=)", "torch: mm + ops", "torch.compile: mm + ops"
TOLERANCE = 1e-2


def tg_bias_gelu(acc, bias):
    """GELU(acc + bias), erf form (torch's F.gelu default), on the accumulator tile."""
    x = acc + bias
    return 0.5 * x * (1.0 + tg.erf(x * SQRT_HALF))


def torch_bias_gelu(a, b, bias):
    return F.gelu(torch.mm(a, b) + bias)


def tg_silu_residual(acc, residual):
    """SiLU(acc) + residual, on the accumulator tile."""
    return acc * tg.sigmoid(acc) + residual


def torch_silu_residual(a, b, residual):
    return F.silu(torch.mm(a, b)) + residual


# name: (the tg epilogue, the same after torch.mm as torch ops, the epilogue's tensors for an (m, n) result)
EPILOGUES = {
    "bias_gelu": (tg_bias_gelu, torch_bias_gelu, lambda m, n: dict(bias=(n,))),
    "silu_residual": (tg_silu_residual, torch_silu_residual, lambda m, n: dict(residual=(m, n))),
}


def parse_shape(text):
    m, n, k = (int(x) for x in text.lower().split("x"))
    return m, n, k


def inputs(m, n, k, name, device, dtype=torch.float16):
    """a, b and the epilogue's tensors (iid normal, seeded)."""
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(m, k, device=device, dtype=dtype, generator=gen)
    b = torch.randn(k, n, device=device, dtype=dtype, generator=gen)
    tensors = {key: torch.randn(*shape, device=device, dtype=dtype, generator=gen)
               for key, shape in EPILOGUES[name][2](m, n).items()}
    return a, b, tensors


def contenders(name, a, b, tensors):
    """Contender name -> a zero-argument call."""
    tg_fn, torch_fn, _ = EPILOGUES[name]
    compiled = torch.compile(torch_fn, dynamic=False)
    args = tuple(tensors.values())
    return {FUSED: lambda: tg.matmul(a, b, epilogue=tg_fn, **tensors),
            EAGER: lambda: torch_fn(a, b, *args),
            COMPILED: lambda: compiled(a, b, *args)}


def relative_error(out, ref):
    return float(torch.linalg.norm(out.float() - ref) / torch.linalg.norm(ref))


def summary(rows):
    """The standing figures of the rows: per square size and epilogue, the torch contenders' ms over the fused
    call's (bias + GELU names the headline keys)."""
    figures = {}
    ms = {(r["epilogue"], r["m"], r["n"], r["k"], r["contender"]): r["ms"] for r in rows}
    for (epilogue, m, n, k, contender), fused_ms in ms.items():
        if contender != FUSED or not m == n == k:
            continue
        suffix = f"{m}" if epilogue == "bias_gelu" else f"{epilogue}_{m}"
        figures[f"fused_epilogue_ratio_{suffix}"] = ms[(epilogue, m, n, k, EAGER)] / fused_ms
        if (epilogue, m, n, k, COMPILED) in ms:   # absent when torch.compile failed
            figures[f"fused_vs_compile_ratio_{suffix}"] = ms[(epilogue, m, n, k, COMPILED)] / fused_ms
    return figures


def bench(name, m, n, k, rounds):
    a, b, tensors = inputs(m, n, k, name, "cuda")
    ref = EPILOGUES[name][1](a.float(), b.float(), *(t.float() for t in tensors.values()))
    calls = contenders(name, a, b, tensors)
    errors = {}
    for contender, call in list(calls.items()):
        t = time.perf_counter()
        try:
            errors[contender] = relative_error(call(), ref)   # the first call compiles
        except Exception as e:   # torch.compile needs a working Triton; without one the run goes on without it
            if contender != COMPILED:
                raise
            print(f"  {contender:34s} failed, left out: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            del calls[contender]
            continue
        torch.cuda.synchronize()
        print(f"  {contender:34s} first call {time.perf_counter() - t:6.1f} s, error {errors[contender]:.2e}")
    if errors[FUSED] > TOLERANCE:
        raise SystemExit(f"the fused call is wrong at {m}x{n}x{k} ({name}): relative error {errors[FUSED]:.3e}")
    iters = loop_iterations(calls[EAGER], budget_ms=100, most=100)
    samples = interleaved(calls, rounds, lambda contender, _: loop_ms(calls[contender], iters))
    rows = []
    flops = 2.0 * m * n * k
    for contender, s in samples.items():
        ms = statistics.median(s)
        rows.append(dict(epilogue=name, contender=contender, m=m, n=n, k=k, dtype="float16", ms=ms,
                         tflops=flops / ms / 1e9, rel_error=errors[contender], rounds=rounds, iters_per_round=iters,
                         spread_pct=100 * (max(s) - min(s)) / ms))
        print(f"  {contender:34s} {ms:9.4f} ms {flops / ms / 1e9:7.1f} TFLOP/s")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", type=parse_shape, default=SHAPES)
    p.add_argument("--epilogues", nargs="*", choices=list(EPILOGUES), default=["bias_gelu"])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds, inputs="iid normal f16",
                timing="a plain Python loop of calls between CUDA events; contenders in a random order per round; "
                       "medians of rounds", torch_compile="torch.compile(fn, dynamic=False), default mode")
    rows = []
    for name in args.epilogues:
        for shape in args.shapes:
            print(f"{name} {'x'.join(map(str, shape))}")
            rows += bench(name, *shape, args.rounds)
    figures = summary(rows)
    for key, value in figures.items():
        print(f"{key:40s} {value:.3f}x")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"epilogue-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump(dict(meta=meta, rows=rows, summary=figures), f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
