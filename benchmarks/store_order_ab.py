"""The flagship's store order by itself, and row-wise fp8 against per-tensor, each in one interleaved loop
(RESULTS.md run 181).

Where a fused epilogue reads tensors, tg.matmul's kernel stores a tile column slice by column slice
(`hopper_matmul.store_order(by_column=True)`); this times each such kernel as committed ("column") against the
same kernel rebuilt storing accumulator by accumulator ("accumulator": `store_order` patched in this process),
for f16 bias + GELU at 4096^3 and 8192^3 and row-wise and per-tensor fp8 at 4096x8192x4096 and 4096x7168x16384,
beside cuBLAS's `torch._scaled_mm` for each fp8 call. Every contender is a CUDA graph of several calls, all replayed
in one loop of interleaved rounds (bench_fp8.py times each scaling in a session of its own), medians in us.

    python3 benchmarks/store_order_ab.py [--rounds 12]
"""
import argparse
import statistics

import torch

import bench_calls
import bench_epilogue
import bench_fp8
import tilegemm as tg
from tilegemm.ops import designs, dispatch, hopper_matmul

FP8_SHAPES = ((4096, 8192, 4096), (4096, 7168, 16384))


def calls(with_cublas):
    """{name: (a zero-argument call, calls per graph)}: tg.matmul's fused calls (and cuBLAS's fp8 ones)."""
    out = {}
    for s in (4096, 8192):
        a, b, t = bench_epilogue.inputs(s, s, s, "bias_gelu", "cuda")
        out[f"bias_gelu {s}^3"] = (lambda a=a, b=b, t=t: tg.matmul(a, b, epilogue=bench_epilogue.tg_bias_gelu, **t),
                                   5 if s == 8192 else 20)
    for m, n, k in FP8_SHAPES:
        per_graph = 20 if k == 4096 else 5
        for scaling in ("tensor", "row"):
            a8, w8, sa, sb, _, _ = bench_fp8.scaled_operands(m, n, k, scaling)
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            out[f"fp8 {scaling} {m}x{n}x{k}"] = (lambda a8=a8, w8=w8, sa=sa, sb=sb, c=c: tg.matmul(
                a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=c), per_graph)
            if with_cublas:
                out[f"cublas {scaling} {m}x{n}x{k}"] = (lambda a8=a8, w8=w8, sa=sa, sb=sb: torch._scaled_mm(
                    a8, w8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16), per_graph)
    return out


def graphs():
    """{(order, name): (a replay of a CUDA graph of the call, calls per graph)}: the committed kernels and cuBLAS's,
    then every tg.matmul kernel rebuilt in accumulator order."""
    out = {("column", name): (bench_calls.graph_of(*call), call[1]) for name, call in calls(True).items()}
    committed = hopper_matmul.store_order
    hopper_matmul.store_order = lambda accumulators, slices, epi_tile_n, by_column: committed(
        accumulators, slices, epi_tile_n, False)
    designs.build.cache_clear()
    dispatch.forget_prepared()
    out.update({("accumulator", name): (bench_calls.graph_of(*call), call[1]) for name, call in calls(False).items()})
    return out


def report(times):
    """Prints each contender's median and the row-wise/per-tensor ratios of each order."""
    med = {key: statistics.median(samples) for key, samples in times.items()}
    for (order, name), value in med.items():
        print(f"  {order:12s} {name:30s} {value:9.1f}")
    for order in ("column", "accumulator"):
        for m, n, k in FP8_SHAPES:
            shape = f"{m}x{n}x{k}"
            tensor, row = med[(order, f"fp8 tensor {shape}")], med[(order, f"fp8 row {shape}")]
            print(f"  {order} {shape}: row/tensor {row / tensor:.4f}; vs cuBLAS tensor "
                  f"{med[('column', f'cublas tensor {shape}')] / tensor:.3f}x, row "
                  f"{med[('column', f'cublas row {shape}')] / row:.3f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=12)
    args = p.parse_args()
    replays = graphs()
    keys = list(replays)
    times = {key: [] for key in keys}
    for r in range(args.rounds):
        for key in (keys if r % 2 else keys[::-1]):
            replay, per_graph = replays[key]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            replay()
            end.record()
            end.synchronize()
            times[key].append(start.elapsed_time(end) / per_graph * 1e3)
        if r + 1 in (args.rounds // 2, args.rounds):
            print(f"after {r + 1} rounds (us):", flush=True)
            report(times)


if __name__ == "__main__":
    main()
