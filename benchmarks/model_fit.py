"""How well the model orders the designs one process timed side by side on one problem, over every 16-bit run in
benchmarks/results/ (CPU only): a change to the model is checked here against all of them before a device run.

    python3 benchmarks/model_fit.py                         # the H200's pairs: how many the model orders right
    python3 benchmarks/model_fit.py --device h100 --worst 20

A pair measured more than --margin apart is ordered right when the model ranks the faster design first (the time
tg.matmul ranks by: designs.rank_s). A measured design is found by its label among the designs tg.matmul ranks for
its problem and their twins in clusters; rows whose label no design has now (older labels, designs since removed)
are counted and left out. The H100's rows were timed with the cluster grids its driver reported, which its sheet
does not hold: its clustered designs are budgeted on every SM.
"""
import argparse
import glob
import itertools
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tilegemm.lang import dtypes  # noqa: E402
from tilegemm.ops import designs  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DEVICE_NAMES = {"h200": "NVIDIA H200", "h100": "NVIDIA H100"}
SIXTEEN_BIT = ("float16", "bfloat16")
NUM_SMS = 132


@dataclass(frozen=True)
class Measured:
    """One design timed in one process: where (the JSON), on what problem, under which label, in how long."""
    source: str
    m: int
    n: int
    k: int
    dtype: str
    layouts: tuple
    label: str
    ms: float


@dataclass(frozen=True)
class Pair:
    """Two designs of one problem and process, the faster measured first, with the model's rank times (seconds)."""
    faster: Measured
    slower: Measured
    faster_rank_s: float
    slower_rank_s: float

    @property
    def gap(self):
        """How much slower the slower design ran: 0.05 for 5%."""
        return self.slower.ms / self.faster.ms - 1

    @property
    def right(self):
        return self.faster_rank_s < self.slower_rank_s


def measured(results_dir=RESULTS_DIR, device="h200"):
    """Every 16-bit design row with a label and a time in the JSON of `results_dir` measured on `device`."""
    rows = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        if not (isinstance(data, dict) and isinstance(data.get("results"), list)
                and data.get("meta", {}).get("device", "").startswith(DEVICE_NAMES[device])):
            continue
        for row in data["results"]:
            if row.get("design") and row.get("ms") and row.get("dtype") in SIXTEEN_BIT and "scaling" not in row:
                layouts = ("mk", "nk") if row.get("suite") == "decode" else ("mk", "kn")
                rows.append(Measured(os.path.basename(path), row["m"], row["n"], row["k"], row["dtype"], layouts,
                                     row["design"], row["ms"]))
    return rows


def designs_by_label(m, n, k, dtype_name, layouts, device):
    """{label: build() parameters} of the designs tg.matmul ranks for this problem and of each in clusters."""
    found = {}
    for params, _ in designs.predictions(m, n, k, dtype_name, device, NUM_SMS, *layouts):
        for size in (1, *designs.CLUSTER_SIZES):
            twin = designs.in_clusters(params, size, device, NUM_SMS)
            found.setdefault(designs.label(twin), twin)
            found.setdefault(designs.label(dict(twin, trigger_dependents=True)), twin)
    return found


def rank_times(rows, device):
    """{Measured: the model's rank time} of the rows whose label a design of their problem has now."""
    by_problem = defaultdict(list)
    for row in rows:
        by_problem[(row.m, row.n, row.k, row.dtype, row.layouts)].append(row)
    times = {}
    for (m, n, k, dtype_name, layouts), problem_rows in by_problem.items():
        labelled = designs_by_label(m, n, k, dtype_name, layouts, device)
        for row in problem_rows:
            params = labelled.get(row.label)
            if params is None:
                continue
            prediction = designs.design_prediction(m, n, k, dtypes.as_dtype(dtype_name), device, params)
            if prediction is not None:
                times[row] = designs.rank_s(params, prediction)
    return times


def groups(rows, times):
    """[[Measured]]: the differently labelled designs one process timed on one problem, of those with a rank time
    (of a label timed twice in a process, as tg.matmul's pick and as a design, the first row)."""
    found = defaultdict(dict)
    for row in rows:
        if row in times:
            found[(row.source, row.m, row.n, row.k, row.dtype, row.layouts)].setdefault(row.label, row)
    return [list(group.values()) for group in found.values() if len(group) > 1]


def regrets(rows, times):
    """Per problem of `groups`: how much slower than the fastest design measured the design ran that the model
    ranks first among them (0.05: 5%), what tg.matmul would lose if those were its only designs."""
    return [min(group, key=times.get).ms / min(row.ms for row in group) - 1 for group in groups(rows, times)]


def pairs(rows, times, margin=0.02):
    """Every Pair of differently labelled designs one process timed on one problem more than `margin` apart."""
    found = []
    for group in groups(rows, times):
        for a, b in itertools.combinations(sorted(group, key=lambda row: row.ms), 2):
            if b.ms > a.ms * (1 + margin):
                found.append(Pair(a, b, times[a], times[b]))
    return found


def report(rows, times, found, worst=10, margin=0.02):
    """Markdown: rows used and left out, pairs ordered right, the model's first among the designs measured against
    the fastest of them, and the widest gaps the model orders wrong."""
    wrong = sorted((p for p in found if not p.right), key=lambda p: -p.gap)
    lost = regrets(rows, times)
    lines = [f"{len(times)} of {len(rows)} measured rows have a design of that label now; "
             f"{len(found) - len(wrong)} of {len(found)} pairs ordered right.",
             f"The model's first of the designs measured on a problem ran more than {margin:.0%} slower than the "
             f"fastest of them on {sum(x > margin for x in lost)} of {len(lost)} problems "
             f"(by {sum(lost) / max(1, len(lost)):.1%} on average, at most {max(lost, default=0):.1%}).", "",
             "| problem | measured faster | measured slower | gap | model's rank times (us) |", "|---|---|---|---|---|"]
    for p in wrong[:worst]:
        f = p.faster
        lines.append(f"| {f.m}x{f.n}x{f.k} {f.dtype} ({f.source}) | {f.label} | {p.slower.label} | "
                     f"{p.gap:.1%} | {p.faster_rank_s * 1e6:.1f} vs {p.slower_rank_s * 1e6:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=sorted(DEVICE_NAMES), default="h200")
    parser.add_argument("--margin", type=float, default=0.02, help="pairs measured at least this far apart")
    parser.add_argument("--worst", type=int, default=10, help="how many misordered pairs to list")
    args = parser.parse_args(argv)
    rows = measured(device=args.device)
    times = rank_times(rows, args.device)
    print(report(rows, times, pairs(rows, times, args.margin), args.worst, args.margin))


if __name__ == "__main__":
    main()
