"""Variants of the flagship beside cuBLAS: the experiments of RESULTS.md runs 7-11, as a committed script.

Runs 7-11 were driven by scratch scripts around `bench_hopper.bench_shape` that
are not in the repository; this script re-runs each experiment with the same
timing (bench_hopper's CUDA-graph replay, random order per round) and writes
the same JSON rows, under the contender names of the committed JSON (e.g.
`results/2026-11-29-run7-tail.json`), so `report.py --tables` reads either.
Variants are flagship builds (`tilegemm.ops.hopper_matmul.build`) with the
parameters below. Two variants of those runs cannot be rebuilt: run 8's
"n192 1/3 epilogue (bound)" (a deliberately wrong epilogue that stored one
slice of three) and run 9's ping-pong with one 128-row accumulator per
consumer (replaced by two 64-row ones in run 10; "n192 pingpong" is that one).

    python3 benchmarks/bench_variants.py tail --rounds 15 --out out       # run 7
    python3 benchmarks/bench_variants.py levers --rounds 25 --out out     # run 8
    python3 benchmarks/bench_variants.py pingpong --rounds 25 --out out   # runs 9-10
    python3 benchmarks/bench_variants.py schedules-2048 --rounds 15 --out out   # run 11
"""
import argparse
import datetime
import functools
import os

import bench_hopper
from report import write_outputs

COOPERATIVE = dict(schedule="cooperative")
VARIANTS = {
    "flagship n256 s4": dict(tile_n=256, stages=4, **COOPERATIVE),
    "n256": dict(tile_n=256, **COOPERATIVE),
    "n192 s4": dict(tile_n=192, stages=4, **COOPERATIVE),
    "n192": dict(tile_n=192, **COOPERATIVE),
    "n192 s5 epi32": dict(tile_n=192, stages=5, epi_tile_n=32, **COOPERATIVE),
    "n192 w16": dict(tile_n=192, grid_tile_width=16, **COOPERATIVE),
    "n192 cluster2": dict(tile_n=192, cluster_m=2, **COOPERATIVE),
    "n192 pingpong": dict(tile_n=192, schedule="pingpong"),
    "n128 cooperative": dict(tile_n=128, **COOPERATIVE),
    "n128 pingpong": dict(tile_n=128, schedule="pingpong"),
    "n256 cooperative": dict(tile_n=256, **COOPERATIVE),
}
CUBE, WIDE = (8192, 8192, 8192), (8192, 28672, 4096)
BOTH = ("float16", "bfloat16")
EXPERIMENTS = {  # name: [(shape, dtype, variants)], one job each, in the order of the committed JSON
    "tail": [(CUBE, dt, ["flagship n256 s4", "n192 s4", "n192 s5 epi32"]) for dt in BOTH]
            + [((8448, 8192, 8192), "float16", ["flagship n256 s4", "n192 s4"])],
    "levers": [(CUBE, dt, ["n256", "n192", "n192 w16", "n192 cluster2"]) for dt in BOTH]
              + [(WIDE, dt, ["n256", "n192"]) for dt in BOTH],
    "pingpong": [(CUBE, dt, ["n256", "n192", "n192 pingpong"]) for dt in BOTH]
                + [(WIDE, dt, ["n192", "n192 pingpong"]) for dt in BOTH],
    "schedules-2048": [((2048, 2048, 2048), dt, ["n128 cooperative", "n128 pingpong", "n256 cooperative"])
                       for dt in BOTH],
}


def variant_builder(name):
    """`build(m, n, k, dtype)` of a flagship variant."""
    from tilegemm.ops import hopper_matmul
    return functools.partial(hopper_matmul.build, **VARIANTS[name])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", choices=sorted(EXPERIMENTS))
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    torch = bench_hopper.torch
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds, inputs="iid normal",
                timing="CUDA graph replay between events, contenders interleaved in a random order per round, "
                       f"median of rounds (bench_variants.py {args.experiment})")
    rows = []
    for job, ((m, n, k), dtype, names) in enumerate(EXPERIMENTS[args.experiment]):
        print(f"{m}x{n}x{k} {dtype}")
        builders = {name: variant_builder(name) for name in names}
        rows += [dict(r, job=job) for r in bench_hopper.bench_shape(m, n, k, dtype, names, args.rounds,
                                                                    builders=builders)
                 if r["contender"] not in ("Triton", "Pallas")]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + write_outputs(os.path.join(args.out, f"{args.experiment}-{stamp}"), meta, rows))


if __name__ == "__main__":
    main()
