"""Updates benchmarks/standing.json — the latest measured value of every figure an issue names — from the files
a device run wrote (the run's full table goes in RESULTS.md first).

    python3 benchmarks/standing.py --run "RESULTS.md run 22" --date 2026-12-01 --device "NVIDIA H200" \\
        --calls results/...-calls.json --fuzz results/...-fuzz.json --sanitizer results/...-sanitizer.json \
        --tensor-parallel results/...-tensor-parallel.json --bench results/bench-....json \
        --epilogue results/...-epilogue.json --fp8 results/fp8-....json

Each key is {"value", "date", "run", "device"}; keys not named by the given files keep their value.
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "standing.json")

CALL_RATIOS = {  # standing key -> (M, N, K) of the user-call row `tg.matmul(a, b)` against `torch.mm(a, b)`
    "user_call_ratio_2048": (2048, 2048, 2048),
    "user_call_ratio_4096": (4096, 4096, 4096),
    "user_call_ratio_8192": (8192, 8192, 8192),
    "user_call_ratio_128x8192x8192": (128, 8192, 8192),
}
FUZZ_KEYS = ("fuzz_bad_calls", "fuzz_wrong_error_type", "fuzz_silent", "fuzz_faults", "fuzz_good_shapes",
             "fuzz_good_correct")


def from_calls(report):
    """Figures of a benchmarks/bench_calls.py JSON report."""
    rows = report["rows"]

    def ratio(contender, shape):
        hits = [r["vs_reference"] for r in rows if r["contender"] == contender and (r["m"], r["n"], r["k"]) == shape
                and r["dtype"] == "float16"]
        return hits[0] if hits else None
    values = {key: ratio("call: tg.matmul(a, b)", shape) for key, shape in CALL_RATIOS.items()}
    values["wt_layout_ratio_8192"] = ratio("call: tg.matmul(a, w.T)", (8192, 8192, 8192))
    values["call_overhead_us"] = report["host_overhead"]["call_overhead_us"]
    return {k: v for k, v in values.items() if v is not None}


def from_fuzz(report):
    return {key: report["summary"][key] for key in FUZZ_KEYS}


def from_sanitizer(report):
    return {"sanitizer_errors": report["sanitizer_errors"]}


def from_tensor_parallel(report):
    """Figures of a benchmarks/bench_tensor_parallel.py report."""
    return {key: report["summary"][key] for key in ("tp2_speedup", "tp2_vs_torch")}


def from_bench(report):
    """The issue-12 figures of a benchmarks/bench_hopper.py report (--decode, --shapes, --suite): its summary
    (benchmarks/decode_grid.py says how each is computed)."""
    return dict(report["meta"].get("summary", {}))


def from_fp8(report):
    """The issue-13 figures of a benchmarks/bench_fp8.py report: its summary (the ratios against
    torch._scaled_mm at 8192^3 and the block-scaled TFLOP/s at 4096x7168x16384)."""
    return dict(report["meta"]["summary"])


def from_epilogue(report):
    """Figures of a benchmarks/bench_epilogue.py report: torch mm + ops (and torch.compile of them) over the fused
    tg.matmul call, per size."""
    return dict(report["summary"])


def update(values, run, date, device, path=PATH):
    """Writes `values` (key -> number) into the standing file, stamped with where they were measured."""
    standing = {}
    if os.path.exists(path):
        with open(path) as f:
            standing = json.load(f)
    for key, value in values.items():
        standing[key] = {"value": round(value, 4) if isinstance(value, float) else value, "date": date, "run": run,
                         "device": device}
    with open(path, "w") as f:
        json.dump(dict(sorted(standing.items())), f, indent=1)
        f.write("\n")
    return standing


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", required=True, help='where the full table is, e.g. "RESULTS.md run 22"')
    p.add_argument("--date", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--calls", help="a benchmarks/bench_calls.py JSON report")
    p.add_argument("--fuzz", help="the fuzz suite's fuzz.json")
    p.add_argument("--sanitizer", help="scripts/sanitize.sh's sanitizer.json")
    p.add_argument("--tensor-parallel", help="a benchmarks/bench_tensor_parallel.py report")
    p.add_argument("--bench", help="a benchmarks/bench_hopper.py report (decode, ragged and suite figures)")
    p.add_argument("--fp8", help="a benchmarks/bench_fp8.py report (fp8 ratios against torch._scaled_mm, "
                                  "block-scaled TFLOP/s)")
    p.add_argument("--epilogue", help="a benchmarks/bench_epilogue.py report")
    args = p.parse_args()
    values = {}
    for path, read in ((args.calls, from_calls), (args.fuzz, from_fuzz), (args.sanitizer, from_sanitizer),
                       (args.tensor_parallel, from_tensor_parallel), (args.bench, from_bench),
                       (args.fp8, from_fp8), (args.epilogue, from_epilogue)):
        if path:
            with open(path) as f:
                values.update(read(json.load(f)))
    for key, entry in sorted(update(values, args.run, args.date, args.device).items()):
        print(f"{key:36s} {entry['value']}  ({entry['run']}, {entry['date']})")


if __name__ == "__main__":
    main()
