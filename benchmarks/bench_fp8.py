"""fp8 GEMM benchmark (issue 13): tg.matmul against torch._scaled_mm (cuBLAS), per-tensor and row-wise scaled.

iid-normal A [M, K] and a weight W [N, K] are quantized to e4m3 with amax scales
(per tensor, or per row of A and of W) and multiplied into bf16 as
`tg.matmul(a8, w8.T, scale_a=, scale_b=, out_dtype=bfloat16)` and
`torch._scaled_mm(a8, w8.t(), scale_a=, scale_b=, out_dtype=bfloat16)`, timed as
benchmarks/bench_hopper.py times (CUDA-graph replay, the two interleaved in a
random order per round, median of rounds). Each row also carries its error
against the float64 product of the same fp8 values and scales (`rel_error`) and
against the float64 product of the unquantized inputs (`rel_error_vs_inputs`,
quantization included). Usage (about 2 minutes on an H200, compiling included):

    python3 benchmarks/bench_fp8.py --out out

The JSON's summary holds the standing figures benchmarks/standing.py --fp8 reads.
"""
import argparse
import concurrent.futures
import datetime
import multiprocessing
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_hopper import gpu_target, measure  # noqa: E402
from report import write_outputs  # noqa: E402

SHAPES = [(8192, 8192, 8192), (4096, 7168, 16384), (4096, 8192, 4096)]
SCALINGS = ("tensor", "row")
E4M3_MAX = 448.0
STANDING = {"fp8_tensorwise_ratio_8192": ("tensor", (8192, 8192, 8192)),   # key -> (scaling, shape) of the row
            "fp8_rowwise_ratio_8192": ("row", (8192, 8192, 8192))}


def quantize(x, scaling):
    """(x quantized to e4m3, its float32 dequantization scale): amax / 448 for the tensor or for each row."""
    amax = x.abs().amax() if scaling == "tensor" else x.abs().amax(dim=1, keepdim=True)
    scale = (amax.float() / E4M3_MAX).clamp(min=1e-12)
    return (x / scale).to(torch.float8_e4m3fn), scale


def scaled_operands(m, n, k, scaling, seed=0):
    """a8 [M, K], w8 [N, K], scale_a ((), or [M, 1]), scale_b ((), or [1, N]) and the float64 products: of the fp8
    values with their scales, and of the unquantized inputs."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen)
    (a8, sa), (w8, sw) = quantize(a, scaling), quantize(w, scaling)
    sb = sw if scaling == "tensor" else sw.t().contiguous()
    ref = (a8.double() @ w8.double().t()) * sa.double() * sb.double()
    return a8, w8, sa, sb, ref, a.double() @ w.double().t()


def design_of(m, n, k, scaling, target):
    """The design tg.matmul chooses for this scaled call on `target`, and the kernel builder's arguments."""
    from tilegemm.lang import dtypes
    from tilegemm.ops import epilogue, scaling as scales
    from tilegemm.ops.dispatch import choose_config
    params = choose_config(m, n, k, "float8_e4m3fn", *target, "mk", "nk", fused=True)
    fused = epilogue.fused(scales.scaled, scales.specs((scaling, scaling), m, n), m, n, None, dtypes.bfloat16)
    return params, ("float8_e4m3fn", params, fused)


def compile_scaled(m, n, k, scaling, target):
    """Compiles the kernel tg.matmul runs for this scaled call into the compile cache (a worker process)."""
    from tilegemm.ops import designs
    start = time.perf_counter()
    _, args = design_of(m, n, k, scaling, target)
    designs.build(m, n, k, *args).compile()
    return f"{m}x{n}x{k} {scaling}: {time.perf_counter() - start:.1f} s"


def precompile(jobs, workers, target):
    context = multiprocessing.get_context("spawn")   # CuTe DSL's compiler does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for job, future in [(j, pool.submit(compile_scaled, *j, target)) for j in jobs]:
            try:
                print(f"  compiled {future.result()}")
            except Exception as e:   # the timing run then reports the failure where it happens
                print(f"  compile failed for {job}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")


def cublas(a8, w8, sa, sb, fast_accum):
    """torch._scaled_mm(a8, w8.t()) into bf16 as a (launch, output) contender: with use_fast_accum=False cuBLAS
    promotes its partial sums out of the tensor core (as DeepGEMM does); with True it accumulates as the tensor core
    does, as tilegemm's kernel does."""
    c = torch.empty(a8.shape[0], w8.shape[0], device="cuda", dtype=torch.bfloat16)

    def launch():
        torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum,
                         out=c)
    return launch, c


def bench(m, n, k, scaling, rounds, target):
    """tg.matmul and torch._scaled_mm (both accumulations; "cuBLAS" is the default, use_fast_accum=False) on one
    shape and scaling: measure()'s rows, each with its two errors."""
    import tilegemm as tg
    a8, w8, sa, sb, ref, unquantized = scaled_operands(m, n, k, scaling)
    print(f"  tg.matmul chose {dict(design_of(m, n, k, scaling, target)[0])}")
    c_ours = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=c_ours)   # choose, compile, prepare
    launchers = {"cuBLAS": cublas(a8, w8, sa, sb, fast_accum=False),
                 "cuBLAS fast accum": cublas(a8, w8, sa, sb, fast_accum=True),
                 "tg.matmul": ((lambda: tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                  out=c_ours)), c_ours)}
    rows = measure(launchers, ref, (m, n, k), f"e4m3 {scaling}", rounds, target_ms=200.0)
    for row in rows:
        out = launchers[row["contender"]][1]
        row.update(scaling=scaling, rel_error_vs_inputs=float(torch.linalg.norm(out.double() - unquantized)
                                             / torch.linalg.norm(unquantized)))
    del ref, unquantized
    return rows


def summary(rows):
    """The standing figures: tg.matmul's speed against torch._scaled_mm per scaling at 8192^3 (vs_cublas)."""
    figures = {}
    for key, (scaling, shape) in STANDING.items():
        for row in rows:
            if (row["contender"], row["scaling"], (row["m"], row["n"], row["k"])) == ("tg.matmul", scaling, shape):
                figures[key] = row["vs_cublas"]
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jobs", type=int, default=min(6, os.cpu_count()), help="processes compiling kernels first")
    p.add_argument("--out", default="out")
    args = p.parse_args()
    target = gpu_target()
    jobs = [(*shape, scaling) for shape in SHAPES for scaling in SCALINGS]
    precompile(jobs, args.jobs, target)
    rows = []
    for job, (m, n, k, scaling) in enumerate(jobs):
        print(f"fp8 {scaling}: {m}x{n}x{k}")
        rows += [dict(row, job=job) for row in bench(m, n, k, scaling, args.rounds, target)]
        for row in rows[-3:]:
            print(f"  {row['contender']:20s} err vs float64 {row['rel_error']:.2e} (of the fp8 values), "
                  f"{row['rel_error_vs_inputs']:.2e} (of the unquantized inputs)")
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds,
                inputs="iid normal, quantized to e4m3 with amax scales", summary=summary(rows),
                timing="CUDA graph replay between events, contenders interleaved in a random order per round, "
                       "median of rounds")
    print("standing figures: " + ", ".join(f"{key} {value:.4f}" for key, value in meta["summary"].items()))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + write_outputs(os.path.join(args.out, f"fp8-{stamp}"), meta, rows))


if __name__ == "__main__":
    main()
