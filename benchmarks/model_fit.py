"""How well the model orders the designs one process timed side by side on one problem, over every run in
benchmarks/results/ (16-bit and fp8; CPU only): a change to the model is checked here against all of them before a
device run.

    python3 benchmarks/model_fit.py                         # the H200's pairs: how many the model orders right
    python3 benchmarks/model_fit.py --device h100 --worst 20

A pair measured more than --margin apart is ordered right when the model ranks the faster design first (the time
tg.matmul ranks by: designs.rank_s; a block-scaled design's predicted time). A measured design is found by its label
among the designs tg.matmul ranks for its problem and their twins in clusters (block-scaled: and their other ring
depths, as tuning times them); rows whose label no design has now (older labels, designs since removed) are counted
and left out. The H100's rows were timed with the cluster grids its driver reported, which its sheet
does not hold: its clustered designs are budgeted on every SM.
"""
import argparse
import glob
import itertools
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tilegemm.lang import dtypes  # noqa: E402
from tilegemm.model import DEVICES, get_device  # noqa: E402
from tilegemm.ops import designs  # noqa: E402
from tilegemm.ops.blockscaling import BlockScales  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
SIXTEEN_BIT = ("float16", "bfloat16")
FP8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}   # bench_fp8.py's dtype column ("e4m3 block") -> tilegemm's
FP8_SCALINGS = ("tensor", "row", "block")
BLOCK_SCALES = BlockScales("km", "nk")   # as bench_fp8.py stores them
NUM_SMS = 132                            # the SMs of every GPU the runs measured on


@dataclass(frozen=True)
class Measured:
    """One design timed in one process: where (the JSON), on what problem, under which label, in how long."""
    source: str
    m: int
    n: int
    k: int
    dtype: str             # tilegemm's name
    layouts: tuple
    label: str
    ms: float
    scaling: str = ""      # fp8: "tensor", "row" or "block"; 16-bit: ""

    @property
    def problem(self):
        return self.m, self.n, self.k, self.dtype, self.layouts, self.scaling


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
    """Every design row with a label and a time in the JSON of `results_dir` measured on `device`."""
    rows = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            data = json.load(f)
        if not (isinstance(data, dict) and isinstance(data.get("results"), list)
                and _sheet(data.get("meta", {}).get("device", "")) is get_device(device)):
            continue
        for row in data["results"]:
            problem = _problem(row)
            if row.get("design") and row.get("ms") and problem:
                rows.append(Measured(os.path.basename(path), row["m"], row["n"], row["k"], problem[0], problem[1],
                                     row["design"], row["ms"], problem[2]))
    return rows


def _sheet(name):
    """The model's sheet of a GPU a run names (its meta's device), or None for one it has none of."""
    try:
        return get_device(name)
    except ValueError:
        return None


def _problem(row):
    """(dtype, layouts, scaling) of a result row: 16-bit a @ b (x @ w.T in the decode suite), or fp8 x @ w.T as
    bench_fp8.py times it; None for any other."""
    if row.get("dtype") in SIXTEEN_BIT and "scaling" not in row:
        return row["dtype"], ("mk", "nk") if row.get("suite") == "decode" else ("mk", "kn"), ""
    fp8 = FP8.get(str(row.get("dtype", "")).split(" ")[0])
    return (fp8, ("mk", "nk"), row["scaling"]) if fp8 and row.get("scaling") in FP8_SCALINGS else None


def rank_times_by_label(m, n, k, dtype_name, layouts, scaling, device):
    """{label: the model's rank time} of the designs tg.matmul ranks for this problem and of each in clusters, or of
    the block-scaled ones at each ring depth."""
    if scaling == "block":
        return _block_scaled_rank_times(m, n, k, dtype_name, device)
    dtype, found = dtypes.as_dtype(dtype_name), {}
    for params, _ in designs.predictions(m, n, k, dtype_name, device, NUM_SMS, *layouts):
        for twin in (designs.in_clusters(params, size, device, NUM_SMS) for size in (1, *designs.CLUSTER_SIZES)):
            if designs.label(twin) not in found:
                prediction = designs.design_prediction(m, n, k, dtype, device, twin)
                if prediction is not None:
                    found[designs.label(twin)] = designs.rank_s(twin, prediction)
    return found


def _block_scaled_rank_times(m, n, k, dtype_name, device):
    """{label: predicted seconds} of the block-scaled designs for this problem, at each ring depth tuning times."""
    found = {}
    for params, prediction in designs.block_scaled_predictions(m, n, k, dtype_name, device, NUM_SMS, BLOCK_SCALES):
        found.setdefault(designs.label(params), prediction.predicted_s)
        scales = BLOCK_SCALES.with_padding() if params.get("pad_scales") else BLOCK_SCALES
        for ring in designs.staged_rings(m, n, k, dtype_name, params, BLOCK_SCALES):
            again = designs.block_scaled_prediction(m, n, k, dtypes.as_dtype(dtype_name), device, ring, scales)
            if again is not None:
                found.setdefault(designs.label(ring), replace(again, prepass_s=prediction.prepass_s).predicted_s)
    return found


def rank_times(rows, device):
    """{Measured: the model's rank time} of the rows whose label a design of their problem has now."""
    by_problem = defaultdict(list)
    for row in rows:
        by_problem[row.problem].append(row)
    times = {}
    for problem, problem_rows in by_problem.items():
        labelled = rank_times_by_label(*problem, device)
        times.update({row: labelled[row.label] for row in problem_rows if row.label in labelled})
    return times


def groups(rows, times):
    """[[Measured]]: the differently labelled designs one process timed on one problem, of those with a rank time
    (of a label timed twice in a process, as tg.matmul's pick and as a design, the first row)."""
    found = defaultdict(dict)
    for row in rows:
        if row in times:
            found[(row.source, *row.problem)].setdefault(row.label, row)
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
        lines.append(f"| {f.m}x{f.n}x{f.k} {f.dtype} {f.scaling} ({f.source}) | {f.label} | {p.slower.label} | "
                     f"{p.gap:.1%} | {p.faster_rank_s * 1e6:.1f} vs {p.slower_rank_s * 1e6:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=sorted(DEVICES), default="h200")
    parser.add_argument("--margin", type=float, default=0.02, help="pairs measured at least this far apart")
    parser.add_argument("--worst", type=int, default=10, help="how many misordered pairs to list")
    args = parser.parse_args(argv)
    rows = measured(device=args.device)
    times = rank_times(rows, args.device)
    print(report(rows, times, pairs(rows, times, args.margin), args.worst, args.margin))


if __name__ == "__main__":
    main()
