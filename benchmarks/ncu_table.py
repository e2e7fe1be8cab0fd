"""Nsight Compute profiles whose raw data is kept: profile one launch per contender, save ncu's CSV, summarise it.

RESULTS.md's ncu tables (runs 8 and 14) were read off the profiler's screen and
cannot be checked; a profile taken with this script keeps ncu's raw CSV in
benchmarks/results/ and the table is printed from that file.

    # on the GPU machine: one launch of each contender under ncu, raw CSV kept
    python3 benchmarks/ncu_table.py profile results/<run>-ncu.csv 8192 8192 8192 float16 hopper_flagship tg.matmul
    # anywhere: the table from the kept CSV
    python3 benchmarks/ncu_table.py summarize results/<run>-ncu.csv
"""
import argparse
import csv
import os
import subprocess
import sys

METRICS = {  # ncu metric -> (column, scale, unit)
    "gpu__time_duration.sum": ("duration", 1e-3, "us"),
    "sm__cycles_elapsed.avg.per_second": ("SM clock", 1e-9, "GHz"),
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": ("tensor pipe active", 1, "%"),
    # over the whole launch, idle SMs and the tail included: what a short kernel loses beyond its busy cycles
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed": ("tensor pipe of elapsed", 1, "%"),
    "dram__bytes_read.sum": ("DRAM read", 1e-9, "GB"),
    "lts__t_bytes.sum": ("L2 traffic", 1e-9, "GB"),
    "launch__grid_size": ("grid", 1, "blocks"),   # with the kernel's name: how many tiles (or slices) it ran
}


def read_raw(path):
    """The kernels of an `ncu --csv --page raw` export: [{column: value}], its units row left out."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if r.get("ID", "").strip().isdigit()]


def summarize(path):
    """A markdown table with one row per profiled kernel: its name and the METRICS, read from ncu's raw CSV."""
    lines = ["| kernel | " + " | ".join(f"{name} ({unit})" for name, _, unit in METRICS.values()) + " |",
             "|---|" + "---|" * len(METRICS)]
    for row in read_raw(path):
        cells = [f"{float(row[metric].replace(',', '')) * scale:.4g}" if row.get(metric) else "—"
                 for metric, (_, scale, _) in METRICS.items()]
        lines.append(f"| {row['Kernel Name'][:60]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def launch_once(m, n, k, dtype, names):
    """Launches each contender once on iid-normal inputs (what `profile` runs under ncu)."""
    import bench_hopper
    torch = bench_hopper.torch
    a = torch.randn(m, k, device="cuda", dtype=bench_hopper.TORCH_DTYPES[dtype])
    b = torch.randn(k, n, device="cuda", dtype=a.dtype)
    for name in names:
        if name == "cuBLAS":
            launch, _ = bench_hopper.cublas_contender(a, b)
        elif name == "tg.matmul":
            launch, _ = bench_hopper.matmul_contender(a, b)
        else:
            launch, _ = bench_hopper.tilegemm_contender(bench_hopper.builder(name), m, n, k, dtype)(a, b)
        launch()
    torch.cuda.synchronize()


def profile(csv_path, m, n, k, dtype, names):
    """Runs `launch_once` under `ncu --clock-control none` and writes ncu's raw CSV to `csv_path`."""
    command = ["ncu", "--csv", "--page", "raw", "--clock-control", "none", "--metrics", ",".join(METRICS),
               sys.executable, os.path.abspath(__file__), "launch", str(m), str(n), str(k), dtype, *names]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    header = next(i for i, line in enumerate(done.stdout.splitlines()) if line.startswith('"ID"'))
    with open(csv_path, "w") as f:
        f.write("\n".join(done.stdout.splitlines()[header:]) + "\n")
    return summarize(csv_path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("profile", "launch"):
        s = sub.add_parser(name)
        if name == "profile":
            s.add_argument("csv")
        s.add_argument("m", type=int)
        s.add_argument("n", type=int)
        s.add_argument("k", type=int)
        s.add_argument("dtype", choices=("float16", "bfloat16"))
        s.add_argument("names", nargs="+", help="contenders: cuBLAS, an example name or tg.matmul")
    sub.add_parser("summarize").add_argument("csv")
    args = p.parse_args()
    if args.command == "summarize":
        print(summarize(args.csv))
    elif args.command == "launch":
        launch_once(args.m, args.n, args.k, args.dtype, args.names)
    else:
        print(profile(args.csv, args.m, args.n, args.k, args.dtype, args.names))


if __name__ == "__main__":
    main()
