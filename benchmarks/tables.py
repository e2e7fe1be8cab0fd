"""RESULTS.md's measured tables, regenerated from the committed JSON in benchmarks/results/.

    python3 benchmarks/report.py --tables            # every table that has raw data
    python3 benchmarks/report.py --tables "Run 7"    # the tables of the sections whose heading contains "Run 7"

A `Table` names the RESULTS.md section and header row it regenerates, the JSON
it reads, and, per measured column, which result fills it; prose columns
(predictions, explanations) are RESULTS.md's own. `check()` compares every
measured cell of RESULTS.md with the JSON at the precision the cell shows
(tests/benchmarks/test_results.py runs it).
"""
import json
import os
import re
from dataclasses import dataclass, field, replace

import report
from decode_grid import TUNED

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
RESULTS_DIR = os.path.join(HERE, "results")

QUICK = ["hopper_v4_tuned", "hopper_flagship", "tg.matmul", "Triton", "Pallas"]
SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4096, 8192, 4096), (8192, 28672, 4096)]
F16, BF16 = "float16", "bfloat16"


def load_results(source):
    """The result rows of a JSON file in benchmarks/results: bench_hopper's {"meta", "results"}, the bare list the
    scratch drivers of runs 7-11 wrote, or "file.json:part" for run 2's {"final": {"rows"}, "levers": {...}}."""
    name, _, part = source.partition(":")
    with open(os.path.join(RESULTS_DIR, name)) as f:
        data = json.load(f)
    if part:
        return data[part]["rows"]
    if isinstance(data, dict):
        return data["results"] if "results" in data else data["rows"]   # bench_hopper / bench_calls
    return data


@dataclass(frozen=True)
class Column:
    """A measured column: its index in the RESULTS.md row, its header, the result field shown ("vs_cublas", "ms"
    or "tflops"), and what picks the result besides the row (contender, dtype, shape, job)."""
    index: int
    header: str
    field: str
    pick: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """One RESULTS.md table: section heading (a prefix), header row (a prefix), JSON source, rows, measured columns.
    A row is a dict picking results (job, shape, dtype, contender), or "geomean": each column's geometric mean of
    vs_cublas over the shapes of the run (report.geometric_means)."""
    section: str
    header: str
    source: str
    rows: list
    columns: list


def value(results, row, column):
    """The number of one cell, or None when the run has no such result or the result no such field (a bandwidth
    fraction is measured only where a weight is streamed)."""
    pick = {**({} if row == "geomean" else row), **column.pick}
    if row == "geomean":
        mean = report.geometric_means(results).get((pick["contender"], pick["dtype"]))
        return mean[0] if mean else None
    found = [r for r in results if all(_field(r, key) == want for key, want in pick.items())]
    if len(found) > 1:
        raise ValueError(f"{pick} picks {len(found)} results; add job= to tell them apart")
    return found[0].get(column.field) if found else None


def _field(result, key):
    return (result["m"], result["n"], result["k"]) if key == "shape" else result[key]


def _label(row):
    if row == "geomean":
        return "geometric mean"
    parts = []
    if "shape" in row:
        parts.append("x".join(map(str, row["shape"])))
    parts += [str(row[key]) for key in ("phase", "design", "dtype", "contender") if key in row]
    if "job" in row:
        parts.append(f"job {row['job']}")
    return " ".join(parts)


def _cell(number, field_name):
    if number is None:
        return "—"
    return {"vs_cublas": f"{number:.3f}x", "vs_reference": f"{number:.3f}x", "ms": f"{number:.4f} ms",
            "tflops": f"{number:.1f}", "mhz": f"{number:.0f} MHz", "watts": f"{number:.1f} W"}[field_name]


def render(table):
    """The table's measured columns as markdown, one row per RESULTS.md row."""
    results = load_results(table.source)
    lines = [f"{table.section} ({table.source})", "",
             "| row | " + " | ".join(c.header for c in table.columns) + " |",
             "|---|" + "---|" * len(table.columns)]
    for row in table.rows:
        lines.append(f"| {_label(row)} | "
                     + " | ".join(_cell(value(results, row, c), c.field) for c in table.columns) + " |")
    return "\n".join(lines)


def results_table(text, table):
    """The data rows of `table` in RESULTS.md's `text`, each a list of cell strings."""
    section = _section(text, table.section)
    lines = section.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(table.header)), None)
    if start is None:
        raise ValueError(f"no table starting {table.header!r} under {table.section!r}")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _section(text, heading):
    """The text of the first section whose heading starts with `heading`, up to the next heading."""
    match = re.search(rf"^{re.escape(heading)}.*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise ValueError(f"RESULTS.md has no section {heading!r}")
    return match.group(1)


NUMBER = re.compile(r"\d+(?:\.(\d+))?")


def check(table, text):
    """Mismatches between the measured cells of `table` in RESULTS.md `text` and its JSON, as messages."""
    results = load_results(table.source)
    shown = results_table(text, table)
    problems = []
    if len(shown) != len(table.rows):
        return [f"{table.section} / {table.header}: {len(shown)} rows in RESULTS.md, {len(table.rows)} specified"]
    for row, cells in zip(table.rows, shown):
        for column in table.columns:
            cell = cells[column.index].replace("**", "")
            number = value(results, row, column)
            match = NUMBER.search(cell)
            where = f"{table.section} / {_label(row)} / {column.header}"
            if row == "geomean" and not cell:
                continue   # RESULTS.md gives means only for some contenders
            if number is None or match is None:
                if (number is None) != (match is None):
                    problems.append(f"{where}: RESULTS.md shows {cell!r}, the JSON has {number}")
                continue
            decimals = len(match.group(1) or "")
            if abs(float(match.group(0)) - number) > 0.5 * 10 ** -decimals * (1 + 1e-6):
                problems.append(f"{where}: RESULTS.md shows {match.group(0)}, the JSON has {number:.{decimals + 2}f}")
    return problems


# ----------------------------------------------------------------------------- the tables

def quick(section, header, source, jobs=(0, 1), contenders=QUICK):
    """A --quick table: a row per dtype job, cuBLAS's time then each contender's ratio."""
    return Table(section, header, source, [dict(job=j) for j in jobs],
                 [Column(1, "cuBLAS", "ms", dict(contender="cuBLAS"))]
                 + [Column(i, c, "vs_cublas", dict(contender=c)) for i, c in enumerate(contenders, 2)])


def suite(section, header, source, columns):
    """A --suite table: a row per shape and a geometric-mean row; `columns` are (index, contender, dtype)."""
    return Table(section, header, source, [dict(shape=s) for s in SHAPES] + ["geomean"],
                 [Column(i, f"{c} {d}", "vs_cublas", dict(contender=c, dtype=d)) for i, c, d in columns])


def ladder(section, header, source, rungs, ms, tflops, ratio):
    """A ladder table: a row per (job, contender); `ms`, `tflops`, `ratio` are the column indices."""
    return Table(section, header, source, [dict(job=j, contender=c) for j, c in rungs],
                 [Column(ms, "ms", "ms"), Column(tflops, "TFLOP/s", "tflops"), Column(ratio, "vs cuBLAS", "vs_cublas")])


def variants(section, header, source, jobs, contenders):
    """A scratch-driver table of runs 7-11: a row per job, cuBLAS's time (column 2) then each variant's ratio."""
    return Table(section, header, source, [dict(job=j) for j in jobs],
                 [Column(2, "cuBLAS", "ms", dict(contender="cuBLAS"))]
                 + [Column(i, c, "vs_cublas", dict(contender=c)) for i, c in enumerate(contenders, 3)])


def calls(section, source, header="| shape |"):
    """A bench_calls table: a row per shape (f16), the kernel's ratio to cuBLAS and the call's to torch.mm."""
    shapes = [(2048, 2048, 2048), (4096, 4096, 4096), (4096, 8192, 4096), (8192, 8192, 8192), (128, 8192, 8192)]
    return Table(section, header, source, [dict(shape=s, dtype=F16) for s in shapes],
                 [Column(1, "kernel vs cuBLAS", "vs_reference", dict(contender="kernel: tg.matmul's kernel (graph)")),
                  Column(2, "call vs torch.mm", "vs_reference", dict(contender="call: tg.matmul(a, b)"))])


def every_row(section, header, source, columns):
    """A table with one row per result of `source`, in the JSON's order (bench_fp8.py's tables)."""
    return Table(section, header, source,
                 [dict(shape=(r["m"], r["n"], r["k"]), dtype=r["dtype"], contender=r["contender"])
                  for r in load_results(source)], columns)


def clock_rows(section, header, source):
    """A benchmarks/tuning_clocks.py table: one row per phase and design, in the JSON's order."""
    return Table(section, header, source, [dict(phase=r["phase"], design=r["design"]) for r in load_results(source)],
                 [Column(3, "ms per launch", "ms"), Column(4, "SM MHz", "mhz"), Column(5, "W", "watts")])


def contender_rows(section, header, source, shape_contenders, columns):
    """A table whose rows are these contenders of each shape: `shape_contenders` [(shape, [contender, ...])]."""
    return Table(section, header, source, [dict(shape=shape, contender=c) for shape, contenders in shape_contenders
                                           for c in contenders], columns)


FP8_COLUMNS = [Column(3, "ms", "ms"), Column(4, "TFLOP/s", "tflops"), Column(5, "vs cuBLAS", "vs_cublas")]
DESIGN_COLUMNS = [Column(4, "measured", "ms"), Column(5, "vs cuBLAS", "vs_cublas")]
DESIGN_ROW_COLUMNS = [Column(4, "ms", "ms"), Column(5, "vs cuBLAS", "vs_cublas")]   # every_row of designs timed
CALL_COLUMNS = [Column(3, "ms", "ms"), Column(4, "vs cuBLAS", "vs_cublas")]         # shape, dtype, contender, ms, ratio
SCRATCH_COLUMNS = [Column(2, "ms", "ms"), Column(3, "TFLOP/s", "tflops"), Column(4, "vs cuBLAS", "vs_cublas")]


RUNGS = ["hopper_v0_naive", "hopper_v1_smem", "hopper_v2_tma_wgmma", "hopper_v3_warp_specialized",
         "hopper_v4_tuned", "hopper_flagship"]

TABLES = [
    Table("## Run 1 —", "| rung |", "2026-11-29-run1-quick-ladder.json",
          [dict(job=2, contender=c) for c in ["cuBLAS", *RUNGS, "Triton", "Pallas"]],
          [Column(2, "measured", "ms"), Column(3, "TFLOP/s", "tflops"), Column(4, "vs cuBLAS", "vs_cublas")]),
    quick("## Run 1 —", "| dtype |", "2026-11-29-run1-quick-ladder.json"),
    suite("## Run 3 —", "| shape |", "2026-11-29-run3-suite.json",
          [(i + 1 + 4 * d, c, dtype) for d, dtype in enumerate((F16, BF16))
           for i, c in enumerate(["hopper_flagship", "tg.matmul", "Triton", "Pallas"])]),
    quick("## Run 4 —", "| dtype |", "2026-11-29-run4-quick.json"),
    quick("## Run 5 —", "| dtype |", "2026-11-29-run5-quick-rotated.json"),
    variants("## Run 7 —", "| shape |", "2026-11-29-run7-tail.json", [0, 1, 2],
             ["flagship n256 s4", "n192 s4", "n192 s5 epi32"]),
    Table("## Run 8 — what happened", "| variant", "2026-11-29-run8-levers.json",
          [dict(contender=c) for c in ["n256", "n192", "n192 w16", "n192 cluster2", "n192 1/3 epilogue (bound)"]],
          [Column(1, "f16 8192^3", "vs_cublas", dict(job=0)), Column(2, "bf16 8192^3", "vs_cublas", dict(job=1))]),
    variants("## Run 8 — what happened", "| shape |", "2026-11-29-run8-levers.json", [2, 3], ["n256", "n192"]),
    variants("## Run 9 — what happened", "| shape |", "2026-11-29-run9-pingpong.json", [0, 1, 2, 3],
             ["n256", "n192", "n192 pingpong"]),
    variants("## Run 10 — what happened", "| shape |", "2026-11-29-run10-pingpong.json", [0, 1, 2, 3],
             ["n256", "n192", "n192 pingpong"]),
    Table("## Run 11 — 2026", "| dtype | cuBLAS | 128x128", "2026-11-29-run11-schedules-2048.json",
          [dict(job=0), dict(job=1)],
          [Column(1, "cuBLAS", "ms", dict(contender="cuBLAS"))]
          + [Column(i, c, "vs_cublas", dict(contender=c))
             for i, c in enumerate(["n128 cooperative", "n128 pingpong", "n256 cooperative"], 2)]),
    quick("## Run 11 — 2026", "| dtype | cuBLAS | v4", "2026-11-29-run11-quick.json"),
    suite("## Run 11 — 2026", "| shape |", "2026-11-29-run11-suite.json",
          [(1, "tg.matmul", F16), (2, "tg.matmul", BF16), (4, "hopper_flagship", F16), (5, "hopper_flagship", BF16)]),
    quick("## Run 12 — 2026", "| dtype |", "2026-11-29-run12-ladder-quick.json"),
    ladder("## Run 12 — 2026", "| rung |", "2026-11-29-run12-ladder-quick.json",
           [(2, c) for c in ["cuBLAS", *RUNGS]], ms=2, tflops=3, ratio=4),
    quick("## Run 15 — 2026", "| dtype |", "2026-11-29-run15-quick.json"),
    quick("## Run 16 — 2026", "| dtype |", "2026-11-29-run16-quick-shuffled.json"),
    suite("## Run 17 — 2026", "| shape |", "2026-11-29-run17-suite-shuffled.json",
          [(1, "tg.matmul", F16), (2, "tg.matmul", BF16), (4, "hopper_flagship", F16), (5, "hopper_flagship", BF16)]),
    ladder("## Run 18 — 2026", "| rung |", "2026-11-29-run18-ladder.json",
           [(0 if c in RUNGS[:2] else 1, c) for c in RUNGS], ms=3, tflops=4, ratio=5),
    calls("## Run 19 — 2026", "2026-12-01-run19-calls.json"),
    calls("## Run 23 — 2026", "2026-12-01-run23-calls.json"),
    Table("## Run 23 — 2026", "| 8192x8192x8192, weight stored", "2026-12-01-run23-calls.json",
          [dict(shape=(8192, 8192, 8192), dtype=F16)],
          [Column(1, "x @ w.T call vs torch.mm", "vs_reference", dict(contender="call: tg.matmul(a, w.T)"))]),
]

# Run 27: the issue-5 suite, the ragged shapes and the decode grid of issue 12, in one job list (tg.matmul's pick).
RUN_27_SHAPES = SHAPES + [(3000, 5000, 2000), (777, 3000, 1400), (5000, 1000, 3000)] + [
    (m, n, k) for n, k in ((8192, 8192), (14336, 4096), (4096, 14336)) for m in (1, 16, 64, 128)]


def issue_12_table(section, header, source):
    """Run 27's job list as a table: a row per shape, tg.matmul's ratio in f16 and bf16, and cuBLAS's f16 time."""
    return Table(section, header, source, [dict(shape=s) for s in RUN_27_SHAPES],
                 [Column(1, "tg.matmul f16", "vs_cublas", dict(contender="tg.matmul", dtype=F16)),
                  Column(2, "tg.matmul bf16", "vs_cublas", dict(contender="tg.matmul", dtype=BF16)),
                  Column(3, "cuBLAS f16", "ms", dict(contender="cuBLAS", dtype=F16))])


def issue_12_run(section, source):
    """The issue-12 table of a run from run 141 on: run 27's shapes and two more ragged ones."""
    return Table(section, "| shape | tg.matmul f16", source,
                 [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
                 issue_12_table("", "", source).columns)


TABLES += [
    quick("## Run 27 — 2026", "| dtype |", "2026-12-01-run27-quick.json",
          contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]),
    issue_12_table("## Run 27 — 2026", "| shape |", "2026-12-01-run27-shapes.json"),
]


def _design_rows(source):
    """One row per timed tilegemm contender of a --all-designs run (tg.matmul's pick and each design), f16."""
    return [dict(shape=(r["m"], r["n"], r["k"]), dtype=F16, contender=r["contender"]) for r in load_results(source)
            if r["contender"] not in ("cuBLAS", "copy w (D2D)")]


TABLES.append(Table("## Run 28 — 2026", "| shape | contender | design", "2026-12-01-run28-designs.json",
                    _design_rows("2026-12-01-run28-designs.json"),
                    [Column(4, "measured", "ms"), Column(5, "vs cuBLAS", "vs_cublas")]))

TABLES += [
    every_row("## Run 29 — 2026", "| shape | scaling |", "2026-12-01-run29-fp8.json", FP8_COLUMNS),
    quick("## Run 29 — 2026", "| dtype |", "2026-12-01-run29-quick.json",
          contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]),
]


def tables(selection=None):
    """The TABLES whose section heading contains `selection` (all when None)."""
    return [t for t in TABLES if selection is None or selection in t.section]

# Run 30: run 27's job list after the model's per-group lone-issue term, and the call path after the merges.
TABLES += [
    issue_12_table("## Run 30 — 2026", "| shape | tg.matmul f16", "2026-12-01-run30-shapes.json"),
    calls("## Run 30 — 2026", "2026-12-01-run30-calls.json", header="| shape | kernel vs cuBLAS"),
    Table("## Run 30 — 2026", "| 8192x8192x8192, weight stored", "2026-12-01-run30-calls.json",
          [dict(shape=(8192, 8192, 8192), dtype=F16)],
          [Column(1, "x @ w.T call vs torch.mm", "vs_reference", dict(contender="call: tg.matmul(a, w.T)"))]),
]

TABLES.append(quick("## Run 32 — 2026", "| dtype |", "2026-12-01-run32-quick.json",
                    contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]))

TABLES.append(every_row("## Run 33 — 2026", "| shape | scaling |", "2026-12-01-run33-fp8-block.json", FP8_COLUMNS))

# Run 34: the merged main on the GPU: fp8 (every scaling), the quick benchmark and the call path.
TABLES += [
    every_row("## Run 34 — 2026", "| shape | scaling |", "2026-12-01-run34-fp8.json", FP8_COLUMNS),
    quick("## Run 34 — 2026", "| dtype |", "2026-12-01-run34-quick.json",
          contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]),
    calls("## Run 34 — 2026", "2026-12-01-run34-calls.json", header="| shape | kernel vs cuBLAS"),
]

# Run 36: fp8 per-tensor and row-wise, and the fused epilogue, after the epilogue's one-slice read-ahead.
EPILOGUE = "fused: tg.matmul(..., epilogue=)", "torch: mm + ops", "torch.compile: mm + ops"
TABLES += [
    every_row("## Run 36 — 2026", "| shape | scaling |", "2026-12-01-run36-fp8.json", FP8_COLUMNS),
    Table("## Run 36 — 2026", "| shape | fused", "2026-12-01-run36-epilogue.json",
          [dict(shape=(s, s, s), dtype=F16) for s in (4096, 8192)],
          [Column(i, c, "ms", dict(contender=c)) for i, c in enumerate(EPILOGUE, 1)]),
]

# Run 37: every fp8 design the model ranks (bench_fp8.py --all-designs), beside tg.matmul's call and cuBLAS.
TABLES.append(every_row("## Run 37 — 2026", "| shape | scaling | contender | predicted",
                        "2026-12-01-run37-fp8-designs.json", DESIGN_COLUMNS))

TABLES.append(quick("## Run 38 — 2026", "| dtype |", "2026-12-01-run38-quick.json",
                    contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]))

# Run 39: run 37's job list and the quick benchmark after measure() conditions every timed replay on cuBLAS's.
TABLES += [
    every_row("## Run 39 — 2026", "| shape | scaling | contender | predicted", "2026-12-01-run39-fp8-designs.json",
              DESIGN_COLUMNS),
    quick("## Run 39 — 2026", "| dtype |", "2026-12-01-run39-quick.json",
          contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]),
]

TABLES.append(issue_12_table("## Run 40 — 2026", "| shape | tg.matmul f16", "2026-12-01-run40-shapes.json"))

# Runs 41-44: the issue-12 table after the per-stage descriptors, the ragged shapes' designs, fp8, filling designs.
TABLES += [
    issue_12_table("## Run 41 — 2026", "| shape | tg.matmul f16", "2026-12-01-run41-shapes.json"),
    quick("## Run 41 — 2026", "| dtype |", "2026-12-01-run41-quick.json",
          contenders=["hopper_v4_tuned", "hopper_flagship", "tg.matmul"]),
    Table("## Run 42 — 2026", "| shape | contender | design", "2026-12-01-run42-designs.json",
          _design_rows("2026-12-01-run42-designs.json"), DESIGN_COLUMNS),
    every_row("## Run 42 — 2026", "| shape | scaling |", "2026-12-01-run42-fp8.json", FP8_COLUMNS),
    Table("## Run 43 — 2026", "| shape | contender | design", "2026-12-01-run43-designs.json",
          _design_rows("2026-12-01-run43-designs.json"), DESIGN_COLUMNS),
    issue_12_table("## Run 44 — 2026", "| shape | tg.matmul f16", "2026-12-01-run44-shapes.json"),
]

# Runs 45-46: 256-row cooperative tiles beside tg.matmul's pick (a scratch driver), then the issue-12 table with them.
TABLES += [
    every_row("## Run 45 — 2026", "| shape | contender |", "2026-12-01-run45-tall-tiles.json", SCRATCH_COLUMNS),
    issue_12_table("## Run 46 — 2026", "| shape | tg.matmul f16", "2026-12-01-run46-shapes.json"),
]

# Runs 47-49: the K sweep and M = 128 profile, the split-K reduction's tile width (prose), clusters of two (scratch).
TABLES += [
    every_row("## Run 47 — 2026", "| shape | contender |", "2026-12-01-run47-ksweep.json", SCRATCH_COLUMNS),
    every_row("## Run 49 — 2026", "| shape | contender |", "2026-12-01-run49-clusters.json", SCRATCH_COLUMNS),
]

# Run 50: the issue-12 table and the call path after the split-K reduction's narrower tiles.
TABLES += [
    issue_12_table("## Run 50 — 2026", "| shape | tg.matmul f16", "2026-12-01-run50-shapes.json"),
    calls("## Run 50 — 2026", "2026-12-01-run50-calls.json", header="| shape | kernel vs cuBLAS"),
]

# Run 51: clusters with the driver's co-resident grid, beside the suite's picks (scratch).
TABLES.append(every_row("## Run 51 — 2026", "| shape | contender |", "2026-12-01-run51-clusters.json", SCRATCH_COLUMNS))

# Run 52: the M = 128 decode cells by tile count and stage depth (scratch).
TABLES.append(every_row("## Run 52 — 2026", "| shape | contender |", "2026-12-01-run52-decode-designs.json",
                        SCRATCH_COLUMNS))

# Runs 53-55: the issue-12 table after run 52's design changes, without the serialized bf16 widths, and final.
TABLES += [issue_12_table(f"## Run {run} — 2026", "| shape | tg.matmul f16",
                          f"2026-12-01-run{run}-shapes.json") for run in (53, 54, 55)]

# Run 56: staggered K starts on tg.matmul's picks (scratch, not adopted).
TABLES.append(every_row("## Run 56 — 2026", "| shape | contender |", "2026-12-01-run56-k-stagger.json", SCRATCH_COLUMNS))

# Runs 59-60: tg.tune_matmul's choice beside tg.matmul's, on the ragged shapes, then over run 27's job list.
DTYPE_SCRATCH_COLUMNS = [Column(3, "ms", "ms"), Column(4, "TFLOP/s", "tflops"), Column(5, "vs cuBLAS", "vs_cublas")]


def issue_12_tuned_table(section, header, source):
    """Run 27's job list with tg.tune_matmul's design timed beside tg.matmul's: each one's ratio in f16 and bf16,
    and cuBLAS's f16 time."""
    return Table(section, header, source, [dict(shape=s) for s in RUN_27_SHAPES],
                 [Column(i, f"{contender} {dtype}", "vs_cublas", dict(contender=contender, dtype=dtype))
                  for i, (contender, dtype) in enumerate([("tg.matmul", F16), (TUNED, F16), ("tg.matmul", BF16),
                                                          (TUNED, BF16)], 1)]
                 + [Column(5, "cuBLAS f16", "ms", dict(contender="cuBLAS", dtype=F16))])


TABLES += [
    every_row("## Run 59 — 2026", "| shape | dtype | contender |", "2026-12-01-run59-tuned-ragged.json",
              DTYPE_SCRATCH_COLUMNS),
    issue_12_tuned_table("## Run 60 — 2026", "| shape | tg.matmul f16", "2026-12-01-run60-tuned.json"),
]

# Run 62: tg.tune_matmul on five ragged shapes.
TABLES.append(every_row("## Run 62 — 2026", "| shape | dtype | contender |", "2026-12-01-run62-tuned-ragged.json",
                        DTYPE_SCRATCH_COLUMNS))

# Runs 64-67: the ragged shapes' row pitch (scratch), block-scaled fp8 after the scale read-ahead, and the issue-12
# table with misaligned rows in the model (run 27's job list and two more ragged shapes).
TABLES += [
    every_row("## Run 64 — 2026", "| shape | contender |", "2026-12-01-run64-pitch.json", SCRATCH_COLUMNS),
    every_row("## Run 65 — 2026", "| shape | scaling |", "2026-12-01-run65-fp8-block.json", FP8_COLUMNS),
    every_row("## Run 66 — 2026", "| shape | scaling |", "2026-12-01-run66-fp8-block.json", FP8_COLUMNS),
    Table("## Run 67 — 2026", "| shape | tg.matmul f16", "2026-12-01-run67-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-01-run67-shapes.json").columns),
]

# Run 69: the model's new picks against the old on ten ragged shapes chosen after the change (scratch).
TABLES.append(every_row("## Run 69 — 2026", "| shape | contender |", "2026-12-01-run69-unseen-ragged.json",
                        SCRATCH_COLUMNS))

# Run 70: deeper rings and other tiles on the mis-aligned shapes still under cuBLAS (scratch, not adopted).
TABLES.append(every_row("## Run 70 — 2026", "| shape | contender |", "2026-12-01-run70-rings.json", SCRATCH_COLUMNS))

# Run 71: tg.tune_matmul on the five ragged shapes after the model counts L2 lines.
TABLES.append(every_row("## Run 71 — 2026", "| shape | dtype | contender |", "2026-12-01-run71-tuned-ragged.json",
                        DTYPE_SCRATCH_COLUMNS))

# Run 75: stream-K tails against their plain twins and tg.matmul's pick (scratch).
TABLES.append(every_row("## Run 75 — 2026", "| shape | contender |", "2026-12-01-run75-stream-k.json", SCRATCH_COLUMNS))

# Run 76: 64x64 tiles (plain and in clusters) at the M = 128 decode cells (scratch, not adopted).
TABLES.append(every_row("## Run 76 — 2026", "| shape | dtype | contender |", "2026-12-01-run76-64x64-decode.json",
                        DTYPE_SCRATCH_COLUMNS))

# Run 79: batch_invariant=True's one-pass pick against tg.matmul's default where it splits K.
TABLES.append(every_row("## Run 79 — 2026", "| shape | contender |", "2026-12-01-run79-batch-invariant.json",
                        SCRATCH_COLUMNS))

# Run 80: batch-invariant calls, split as one row's call against the weight, against tg.matmul's default.
TABLES.append(every_row("## Run 80 — 2026", "| shape | contender |", "2026-12-01-run80-batch-invariant.json",
                        SCRATCH_COLUMNS))

# Runs 82-85: block-scaled fp8 with the promotion under the next step's WGMMAs; its variants and the unscaled tile
# (scratch, one process each); run 87: the fp8 table and the issue-12 table; run 88: the call path.
TABLES += [
    every_row("## Run 82 — 2026", "| shape | scaling |", "2026-12-02-run82-fp8-block.json", FP8_COLUMNS),
    every_row("## Run 84 — 2026", "| shape | contender |", "2026-12-02-run84-block-unscaled.json", SCRATCH_COLUMNS),
    Table("## Run 85 — 2026", "| shape | cuBLAS blockwise", "2026-12-02-run85-block-variants.json",
          [dict(shape=s) for s in ((4096, 7168, 16384), (8192, 8192, 8192), (4096, 8192, 4096))],
          [Column(i, contender, "tflops", dict(contender=contender)) for i, contender in
           enumerate(["cuBLAS", "overlapped", "early", "early clusters of 2", "unscaled 128x128"], 1)]),
    every_row("## Run 87 — 2026", "| shape | scaling |", "2026-12-02-run87-fp8.json", FP8_COLUMNS),
    Table("## Run 87 — 2026", "| shape | tg.matmul f16", "2026-12-02-run87-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-02-run87-shapes.json").columns),
    calls("## Run 88 — 2026", "2026-12-02-run88-calls.json", header="| shape | kernel vs cuBLAS"),
]

# Runs 91, 92 and 96: variants of the block-scaled promotion beside the kernel on main and the unscaled tile
# (scratch, one process each); run 97: the block-scaled fp8 table with the scales staged in SMEM.
TABLES += [every_row(f"## Run {run} — 2026", "| shape | contender |", source, SCRATCH_COLUMNS) for run, source in
           [(91, "2026-12-02-run91-block-promotion-variants.json"),
            (92, "2026-12-02-run92-block-promotion-variants.json"), (96, "2026-12-02-run96-block-staged.json")]]
TABLES.append(every_row("## Run 97 — 2026", "| shape | scaling |", "2026-12-02-run97-fp8-block.json", FP8_COLUMNS))

# Run 100: clusters sharing both A and B beside tg.matmul's pick (scratch, not adopted); run 102: the fp8 table;
# run 103: the issue-12 table (run 103's ragged shapes and suite, run 102's decode grid).
TABLES += [
    every_row("## Run 100 — 2026", "| shape | contender |", "2026-12-02-run100-clusters-2d.json", SCRATCH_COLUMNS),
    every_row("## Run 102 — 2026", "| shape | scaling |", "2026-12-02-run102-fp8.json", FP8_COLUMNS),
    Table("## Run 103 — 2026", "| shape | tg.matmul f16", "2026-12-02-run103-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-02-run103-shapes.json").columns),
]

# Run 104: block-scaled designs with their scales padded first, beside reading them from GMEM.
TABLES.append(every_row("## Run 104 — 2026", "| shape | scaling |", "2026-12-02-run104-fp8-padded.json", FP8_COLUMNS))

# Runs 106-108: fp8 at decode sizes (tg.matmul before the change; every design that can apply the scales, and
# one-pass swap-AB unscaled; tg.matmul after it).
TABLES += [
    every_row("## Run 106 — 2026", "| shape | scaling |", "2026-12-02-run106-fp8-decode.json", FP8_COLUMNS),
    every_row("## Run 107 — 2026", "| shape | scaling |", "2026-12-02-run107-fp8-decode-designs.json", FP8_COLUMNS),
    every_row("## Run 107 — 2026", "| shape | contender |", "2026-12-02-run107-swap-unscaled.json", SCRATCH_COLUMNS),
    every_row("## Run 108 — 2026", "| shape | scaling |", "2026-12-02-run108-fp8-decode.json", FP8_COLUMNS),
]

# Runs 109-110: block-scaled fp8 at decode sizes, split over K (109: scales staged where TMA can; 110: read from GMEM).
TABLES += [every_row(f"## Run {run} — 2026", "| shape | scaling |", source, FP8_COLUMNS) for run, source in
           [(109, "2026-12-02-run109-fp8-block-decode.json"), (110, "2026-12-02-run110-fp8-block-decode.json")]]

# Run 112: a fused bias-GELU call at decode sizes (bench_epilogue.py), after fused calls may run swap-AB and split-K.
TABLES.append(Table("## Run 112 — 2026", "| shape | fused", "2026-12-02-run112-epilogue-decode.json",
                    [dict(shape=s, dtype=F16) for s in ((16, 8192, 8192), (1, 14336, 4096), (128, 4096, 14336))],
                    [Column(i, c, "ms", dict(contender=c)) for i, c in enumerate(EPILOGUE, 1)]))

# Runs 113 and 114: split-K summed by a second pass or by the last slice (scratch driver, one process each).
TABLES += [every_row(f"## Run {run} — 2026", "| shape | contender |", f"2026-12-02-run{run}-split-reductions.json",
                     SCRATCH_COLUMNS) for run in (113, 114)]

# Run 116: the issue-12 table after split-K summed by the last slice (both processes of one call, merged).
TABLES.append(Table("## Run 116 — 2026", "| shape | tg.matmul f16", "2026-12-02-run116-shapes.json",
                    [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
                    issue_12_table("", "", "2026-12-02-run116-shapes.json").columns))

# Run 118: fp8 at decode sizes after split-K summed by the last slice.
TABLES.append(every_row("## Run 118 — 2026", "| shape | scaling |", "2026-12-02-run118-fp8-decode.json", FP8_COLUMNS))

# Run 121: 128-row tiles split over K beside tg.matmul's decode designs (a scratch patch, not adopted).
TABLES.append(Table("## Run 121 — 2026", "| shape | contender | design", "2026-12-02-run121-decode-designs.json",
                    _design_rows("2026-12-02-run121-decode-designs.json"), DESIGN_COLUMNS))

# Run 122: the call path (bench_calls).
TABLES.append(calls("## Run 122 — 2026", "2026-12-02-run122-calls.json", header="| shape | kernel vs cuBLAS"))

# Run 124: classic tiles in clusters of 2 beside tg.matmul's pick (a scratch driver).
TABLES.append(every_row("## Run 124 — 2026", "| shape | dtype | contender |", "2026-12-02-run124-clusters.json",
                        DESIGN_ROW_COLUMNS))

# Run 126: 128x256 (and 128x192) tiles in clusters beside tg.matmul's pick on seven ragged shapes (--design).
TABLES.append(every_row("## Run 126 — 2026", "| shape | dtype | contender |", "2026-12-02-run126-designs-ragged.json",
                        DESIGN_ROW_COLUMNS))

# Run 127: block-scaled fp8 at decode sizes, splits summed by the last slice.
TABLES.append(every_row("## Run 127 — 2026", "| shape | scaling |", "2026-12-02-run127-fp8-block-decode.json",
                        FP8_COLUMNS))

# Run 128: block-scaled fp8 at decode sizes after the padding consumers' change; run 129: the issue-12 table (both
# processes of one call, merged) and the fp8 table.
TABLES += [
    every_row("## Run 128 — 2026", "| shape | scaling |", "2026-12-02-run128-fp8-block-decode.json", FP8_COLUMNS),
    Table("## Run 129 — 2026", "| shape | tg.matmul f16", "2026-12-02-run129-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-02-run129-shapes.json").columns),
    every_row("## Run 129 — 2026", "| shape | scaling |", "2026-12-02-run129-fp8.json", FP8_COLUMNS),
]

# Run 131: block-scaled fp8 at decode sizes on swapped tiles.
TABLES.append(every_row("## Run 131 — 2026", "| shape | scaling |", "2026-12-02-run131-fp8-block-decode.json",
                        FP8_COLUMNS))

# Run 132: swapped and unswapped block-scaled designs side by side at M = 32 and 64 (bench_fp8 --all-designs).
TABLES.append(every_row("## Run 132 — 2026", "| shape | contender |", "2026-12-02-run132-fp8-block-swap-widths.json",
                        [Column(2, "ms", "ms"), Column(3, "vs cuBLAS", "vs_cublas")]))

# Run 134: the issue-12 table after f32 rounds to bf16 in pairs (both processes of one call, merged).
TABLES.append(Table("## Run 134 — 2026", "| shape | tg.matmul f16", "2026-12-02-run134-shapes.json",
                    [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
                    issue_12_table("", "", "2026-12-02-run134-shapes.json").columns))

# Run 135: the fp8 table after f32 rounds to bf16 in pairs; run 136: the block-scaled decode grid.
TABLES += [
    every_row("## Run 135 — 2026", "| shape | scaling |", "2026-12-02-run135-fp8.json", FP8_COLUMNS),
    every_row("## Run 136 — 2026", "| shape | scaling |", "2026-12-02-run136-fp8-block-decode.json", FP8_COLUMNS),
]

# Run 137: the issue-12 table after Hopper kernels prefetch their TMA descriptors (both processes, merged).
TABLES.append(Table("## Run 137 — 2026", "| shape | tg.matmul f16", "2026-12-02-run137-shapes.json",
                    [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
                    issue_12_table("", "", "2026-12-02-run137-shapes.json").columns))

# Run 138: swapped 256x152 tiles (tg.matmul's new pick) beside the old 256x160 pick (--design).
TABLES.append(every_row("## Run 138 — 2026", "| shape | dtype | contender |", "2026-12-02-run138-designs.json",
                        DESIGN_ROW_COLUMNS))

# Run 141: wider store slices and stmatrix.trans, each pick beside a design of one's own (three processes, merged),
# and the whole issue-12 table; run 142: two shapes sampled again; run 143: the issue-12 table again.
TABLES += [
    every_row("## Run 141 — 2026", "| shape | dtype | contender |", "2026-12-02-run141-designs.json",
              DESIGN_ROW_COLUMNS),
    issue_12_run("## Run 141 — 2026", "2026-12-02-run141-shapes.json"),
    every_row("## Run 142 — 2026", "| shape | dtype | contender |", "2026-12-02-run142-shapes.json",
              [Column(3, "ms", "ms"), Column(4, "vs cuBLAS", "vs_cublas")]),
    issue_12_run("## Run 143 — 2026", "2026-12-02-run143-shapes.json"),
]

# Runs 144-150: fp8 in clusters and 128x256 tiles in fours (144); fp8 tiles and rings, five stages for 16-bit
# ping-pong (146); the issue-12 table with five-stage tiles of C (147) and on the final design space (149); 128x128
# tiles in four and five stages (148); the fp8 tables (148, 150) and 128x160 against 128x256 (149).
TABLES += [
    every_row("## Run 144 — 2026", "| shape | dtype | contender |", "2026-12-02-run144-designs.json",
              DESIGN_ROW_COLUMNS),
    every_row("## Run 144 — 2026", "| shape | scaling |", "2026-12-02-run144-fp8-clusters.json", FP8_COLUMNS),
    every_row("## Run 144 — 2026", "| shape | block scaling |", "2026-12-02-run144-fp8-block-clusters.json", FP8_COLUMNS),
    every_row("## Run 146 — 2026", "| shape | scaling |", "2026-12-02-run146-fp8-variants.json", FP8_COLUMNS),
    every_row("## Run 146 — 2026", "| shape | dtype | contender |", "2026-12-02-run146-stages.json",
              DESIGN_ROW_COLUMNS),
    issue_12_run("## Run 147 — 2026", "2026-12-02-run147-shapes.json"),
    every_row("## Run 148 — 2026", "| shape | dtype | contender |", "2026-12-02-run148-rings.json",
              DESIGN_ROW_COLUMNS),
    every_row("## Run 148 — 2026", "| shape | scaling |", "2026-12-02-run148-fp8.json", FP8_COLUMNS),
    issue_12_run("## Run 149 — 2026", "2026-12-02-run149-shapes.json"),
    every_row("## Run 149 — 2026", "| shape | scaling |", "2026-12-02-run149-fp8-widths.json", FP8_COLUMNS),
    every_row("## Run 150 — 2026", "| shape | scaling |", "2026-12-02-run150-fp8.json", FP8_COLUMNS),
]

# Run 152: DeepGEMM beside the block-scaled kernel, 256x128 tiles and six stages.
TABLES += [
    every_row("## Run 152 — 2026", "| shape | block scaling |", "2026-12-03-run152-fp8-block.json", FP8_COLUMNS),
]

# Runs 153-154: the closing tables (fp8 with DeepGEMM beside; issue 12).
TABLES += [
    every_row("## Run 153 — 2026", "| shape | scaling |", "2026-12-03-run153-fp8.json", FP8_COLUMNS),
    issue_12_run("## Run 154 — 2026", "2026-12-03-run154-shapes.json"),
]

# Runs 155-156: 128x256 tiles at 1500x2504x1000 and 2048^3 against the committed picks (the tie-break left out).
TABLES += [
    every_row("## Run 155 — 2026", "| shape | dtype | contender | ms |", "2026-12-03-run155-ties.json", FP8_COLUMNS),
    every_row("## Run 156 — 2026", "| shape | dtype | contender | ms |", "2026-12-03-run156-ties.json", FP8_COLUMNS),
]

# Runs 158-160: fp8 tiles in clusters along N sharing A (158), the block-scaled pick's tiles in other orders (159)
# and in narrower snakes (160; its per-tensor JSON did not come back, the logs hold that table).
TABLES += [every_row(f"## Run {run} — 2026", header, f"2026-12-03-run{run}-{name}.json", FP8_COLUMNS)
           for run, header, name in [(158, "| shape | block scaling |", "fp8-block-pairs"),
                                     (158, "| shape | scaling |", "fp8-tensor-pairs"),
                                     (159, "| shape | block scaling |", "fp8-order"),
                                     (160, "| shape | block scaling |", "fp8-block-order")]]

# Run 169: the decode grid with dependent launches (run 154's ratios in brackets, prose).
TABLES.append(Table("## Run 169 — 2026", "| shape | tg.matmul f16", "2026-12-03-run169-decode.json",
                    [dict(shape=(m, n, k)) for n, k in ((8192, 8192), (14336, 4096), (4096, 14336))
                     for m in (1, 16, 64, 128)],
                    issue_12_table("", "", "2026-12-03-run169-decode.json").columns
                    + [Column(4, "bandwidth fraction f16", "bw_fraction", dict(contender="tg.matmul", dtype=F16))]))

# Run 171: the issue-12 table with the trigger (both processes, merged), the public call and the fp8 table.
TABLES += [
    Table("## Run 171 — 2026", "| shape | tg.matmul f16", "2026-12-03-run171-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-03-run171-shapes.json").columns),
    calls("## Run 171 — 2026", "2026-12-03-run171-calls.json", header="| shape | kernel vs cuBLAS"),
    every_row("## Run 171 — 2026", "| shape | scaling |", "2026-12-03-run171-fp8.json", FP8_COLUMNS),
]

# Run 175: the public call, loops sized from a warm call.
TABLES.append(calls("## Run 175 — 2026", "2026-12-03-run175-calls.json", header="| shape | kernel vs cuBLAS"))

# Run 176: the fp8 table after compute-sanitizer over every target.
TABLES.append(every_row("## Run 176 — 2026", "| shape | scaling |", "2026-12-03-run176-fp8.json", FP8_COLUMNS))

# Run 178: the fp8 table with each epilogue tile read once; run 179: the fused bias + GELU epilogue.
TABLES += [
    every_row("## Run 178 — 2026", "| shape | scaling |", "2026-12-03-run178-fp8.json", FP8_COLUMNS),
    Table("## Runs 179-180 — 2026", "| shape | fused", "2026-12-03-run179-epilogue.json",
          [dict(shape=(s, s, s), dtype=F16) for s in (4096, 8192)],
          [Column(i, c, "ms", dict(contender=c)) for i, c in enumerate(EPILOGUE, 1)]),
]

# Run 182: the fp8 table with the first store slice's epilogue tiles read before the main loop.
TABLES.append(every_row("## Run 182 — 2026", "| shape | scaling |", "2026-12-03-run182-fp8.json", FP8_COLUMNS))

# Run 185: the fused bias + GELU epilogue with the first store slice's epilogue tiles read before the main loop.
TABLES.append(Table("## Runs 184-185 — 2026", "| shape | fused", "2026-12-03-run185-epilogue.json",
                    [dict(shape=(s, s, s), dtype=F16) for s in (4096, 8192)],
                    [Column(i, c, "ms", dict(contender=c)) for i, c in enumerate(EPILOGUE, 1)]))

# Run 186: the fp8 table with tg.matmul's picks in clusters of two and again as plain design rows.
TABLES.append(every_row("## Run 186 — 2026", "| shape | scaling |", "2026-12-03-run186-fp8.json", FP8_COLUMNS))

# Run 188 (on an H100): the issue-12 table (both processes, merged) and the fp8 table, clusters of four over-held.
TABLES += [
    Table("## Run 188 — 2026", "| shape | tg.matmul f16", "2026-12-06-run188-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-06-run188-shapes.json").columns),
    every_row("## Run 188 — 2026", "| shape | scaling |", "2026-12-06-run188-fp8.json", FP8_COLUMNS),
]

# Runs 189-191 (on an H100): the issue-12 table (both processes, merged) and the fp8 table with the driver's grids.
TABLES += [
    Table("## Runs 189-191 — 2026", "| shape | tg.matmul f16", "2026-12-06-run189-shapes.json",
          [dict(shape=s) for s in RUN_27_SHAPES + [(1500, 2504, 1000), (2500, 3504, 1504)]],
          issue_12_table("", "", "2026-12-06-run189-shapes.json").columns),
    every_row("## Runs 189-191 — 2026", "| shape | scaling |", "2026-12-06-run189-fp8.json", FP8_COLUMNS),
]

# Runs 192-197 (on an H100): the fp8 tables with tg.tune_matmul's choice ("tg.matmul tuned").
TABLES += [every_row("## Runs 192-197 — 2026", f"| shape (run {run}) | scaling |", f"2026-12-06-run{run}-fp8.json",
                     FP8_COLUMNS) for run in (193, 194, 196)]

# Runs 198-201 (on an H100): wider tiles without scales; block-scaled tiles by their ring depth.
TABLES += [every_row("## Run 198 — 2026", f"| shape (run 198, {part}) | scaling |",
                     f"2026-12-06-run198-fp8-{name}.json", FP8_COLUMNS)
           for part, name in (("no promotion", "tensor"), ("block-scaled", "block"))]
TABLES += [every_row(f"## Run {run} — 2026", f"| shape (run {run}) | scaling |", f"2026-12-06-run{run}-fp8.json",
                     FP8_COLUMNS) for run in (199, 200, 201)]

# Run 202 (on an H100): four stages for the unpromoted picks, f16 (two bench_hopper processes) and fp8 per-tensor;
# every table has bench_fp8's columns.
TABLES += [every_row("## Run 202 — 2026", f"| shape (run 202, {part}) |", f"2026-12-06-run202-{name}.json",
                     FP8_COLUMNS)
           for part, name in (("f16 8192^3", "f16-8192"), ("f16 ragged", "f16-ragged"), ("fp8", "fp8"))]

# Runs 204-208 (on an H200): the fp8 table with the users' calls, block-scaled rings, the issue-12 table (runs 207 and
# 206 merged), and 1500x2504x1000's two designs.
TABLES += [every_row("## Runs 204-208 — 2026", f"| shape (run {run}) | scaling |", f"2026-12-06-run{run}-fp8.json",
                     FP8_COLUMNS) for run in (204, 205)]
TABLES += [issue_12_run("## Runs 204-208 — 2026", "2026-12-06-run206-207-shapes.json"),
           every_row("## Runs 204-208 — 2026", "| shape (run 208) | dtype |", "2026-12-06-run208-shapes.json",
                     FP8_COLUMNS)]
TABLES += [every_row("## Run 209 — 2026", "| shape (run 209, H100) | dtype |", "2026-12-06-run209-shapes.json",
                     DESIGN_ROW_COLUMNS),
           calls("## Run 209 — 2026", "2026-12-06-run209-calls.json", header="| shape (run 209, H100) | kernel vs")]
TABLES += [every_row(f"## Run {run} — 2026", f"| shape (run {run}, H100, {part}) |",
                     f"2026-12-06-run{run}-{part}.json", DESIGN_ROW_COLUMNS)
           for run, parts in ((210, "abc"), (211, "ab")) for part in parts]

# Run 216 (on an H100): the (4096, 14336) weight unsplit (tg.matmul's pick) and split in two, at M = 1 and 16.
TABLES += [Table("## Runs 215-217 — 2026", "| shape (run 216, H100) |", "2026-12-06-run216-split.json",
                 [dict(shape=(m, 4096, 14336), dtype=dtype, contender=contender)
                  for dtype in (F16, BF16) for m in (1, 16)
                  for contender in ("cuBLAS", "tg.matmul", "design: swap-AB + split-K: 64x16 pingpong, 16 stages, "
                                    "16-column stores, split 2 summed by the last slice")],
                 DESIGN_ROW_COLUMNS)]

# Runs 221-222 (on an H100): the issue-12 table (decode, then the ragged shapes and the suite; merged).
TABLES.append(issue_12_run("## Runs 218-222 — 2026", "2026-12-06-run221-222-shapes.json"))

# Runs 228-231 (on an H100): loads through descriptors asking L2 to promote misses to 256 bytes, beside the same
# designs without, block-scaled and per-tensor fp8.
TABLES += [every_row("## Runs 228-231 — 2026", f"| shape (run {run}, H100, {part}) | scaling |",
                     f"2026-12-06-run{run}-fp8-{part}.json", FP8_COLUMNS)
           for run, parts in ((228, ("block",)), (229, ("block", "tensor")), (231, ("tensor", "block"))) for part in parts]

# Run 241 (on an H100): 256x128 block-scaled tiles promoted alone, in pairs along N, and in pairs promoted;
# run 243: tg.tune_matmul's choice beside the promoted 256x128 tile.
TABLES += [every_row(f"## {runs} — 2026", f"| shape (run {run}, H100) | scaling |", f"2026-12-06-run{run}-{name}.json",
                     FP8_COLUMNS) for runs, run, name in [("Run 241", 241, "fp8-block"),
                                                          ("Runs 242-243", 243, "fp8-block-tuned"),
                                                          ("Run 244", 244, "fp8-block-tuned"),
                                                          ("Run 245", 245, "fp8-block-tuned")]]

# Runs 252-253 (on an H100): fp8 of two types (A by W: e5m2 by e4m3, e4m3 by e5m2), then e4m3 by e4m3.
TABLES += [every_row("## Runs 249-253 — 2026", f"| shape (run {run}, H100{part and ', ' + part}) | scaling |",
                     f"2026-12-06-run{run}-fp8{part and '-' + part}.json", FP8_COLUMNS)
           for run, part in ((252, "e5m2xe4m3"), (252, "e4m3xe5m2"), (253, ""))]

# Run 259 (on an H100): e5m2 by e4m3 row-wise through a given design and tg.tune_matmul.
TABLES.append(every_row("## Runs 259-260 — 2026", "| shape (run 259, H100, e5m2xe4m3) | scaling |",
                        "2026-12-07-run259-fp8-e5m2xe4m3.json", FP8_COLUMNS))

# Runs 264-268 (on an H100): the issue-12 table (decode, then the ragged shapes and the suite; merged), the fp8
# table, and the promoted 256x128 block-scaled tile beside tg.tune_matmul's choice.
TABLES += [issue_12_run("## Runs 264-268 — 2026", "2026-12-07-run265-shapes.json"),
           every_row("## Runs 264-268 — 2026", "| shape (run 266, H100) | scaling |", "2026-12-07-run266-fp8.json",
                     FP8_COLUMNS),
           every_row("## Runs 264-268 — 2026", "| shape (run 267, H100) | scaling |",
                     "2026-12-07-run267-fp8-block-tuned.json", FP8_COLUMNS)]

# Runs 271-272 (on an H100): SM clocks and power under tg.tune_matmul's batches (benchmarks/tuning_clocks.py).
TABLES += [clock_rows("## Run 271 — 2026", "| phase (run 271, H100) |", "2026-12-07-run271-tuning-clocks.json"),
           clock_rows("## Run 272 — 2026", "| phase (run 272, H100) |", "2026-12-07-run272-tuning-clocks.json")]

# Run 274 (on an H100): every design family at the H100's gaps (2500x3504x1504 whole; the (14336, 4096) picks beside
# the two fastest designs).
TABLES.append(contender_rows("## Run 274 — 2026", "| shape (run 274, H100) |",
                             "2026-12-07-run274-designs.json", [
    ((2500, 3504, 1504), ["cuBLAS", "tg.matmul"] + [f"design: {d}" for d in (
        "classic 128-row: 128x192 pingpong, 5 stages, 32-column stores, clusters of 2",
        "filling, swapped 256-row: 256x144 cooperative, 4 stages, 32-column stores",
        "filling, swapped 256-row: 256x152 cooperative, 4 stages, 32-column stores",
        "classic 128-row: 128x192 cooperative, 5 stages, 32-column stores",
        "classic 128-row: 128x192 pingpong, 5 stages, 32-column stores",
        "filling, swapped 128-row: 128x184 cooperative, 4 stages",
        *(f"classic 128-row + stream-K: 128x256 cooperative, 4 stages, stream-K tail x{x}" for x in (2, 3, 4)))]),
    ((1, 14336, 4096), ["cuBLAS", "tg.matmul", "design: swap-AB: 64x16 pingpong, 16 stages, 16-column stores",
                        "design: swap-AB: 128x16 cooperative, 12 stages, 16-column stores"]),
    ((16, 14336, 4096), ["cuBLAS", "tg.matmul", "design: swap-AB: 64x16 pingpong, 16 stages, 16-column stores",
                         "design: 64-row: 64x224 pingpong, 5 stages, 32-column stores"]),
    ((64, 14336, 4096), ["cuBLAS", "tg.matmul", "design: swap-AB: 128x64 cooperative, 8 stages",
                         "design: 64-row: 64x224 pingpong, 5 stages, 32-column stores"])], DESIGN_ROW_COLUMNS))

# Run 277 (on an H100): the design families at the other four ragged shapes (the pick beside the two fastest designs).
TABLES.append(contender_rows("## Runs 275-277 — 2026", "| shape (run 277, H100) |",
                             "2026-12-07-run277-designs.json", [
    (shape, ["cuBLAS", "tg.matmul"] + [f"design: {d}" for d in designs]) for shape, designs in [
        ((3000, 5000, 2000), ["filling, swapped 128-row: 128x232 cooperative, 4 stages",
                              "classic 128-row: 128x192 pingpong, 5 stages, 32-column stores, clusters of 2"]),
        ((777, 3000, 1400), ["filling, swapped 128-row: 128x160 cooperative, 4 stages, clusters of 4",
                             "filling, swapped 128-row: 128x160 cooperative, 4 stages"]),
        ((5000, 1000, 3000), ["filling, swapped 256-row: 256x152 cooperative, 4 stages, 32-column stores, "
                              "clusters of 2",
                              "filling, swapped 128-row: 128x152 cooperative, 4 stages, clusters of 2"]),
        ((1500, 2504, 1000), ["classic 128-row: 128x256 cooperative, 4 stages, clusters of 4",
                              "classic 128-row: 128x128 cooperative, 4 stages, clusters of 4"])]], DESIGN_ROW_COLUMNS))

# Run 279 (on an H100): the aligned twins of 2500x3504x1504 and 3000x5000x2000, every design timed.
TABLES.append(every_row("## Runs 278-279 — 2026", "| shape (run 279, H100) |",
                        "2026-12-07-run279-designs-aligned.json", DESIGN_ROW_COLUMNS))

# Run 280 (on an H100): store slices of the classic and swapped tiles at two ragged shapes and an aligned one.
TABLES.append(every_row("## Run 280 — 2026", "| shape (run 280, H100) |", "2026-12-07-run280-slices.json",
                        DESIGN_ROW_COLUMNS))

# Run 282 (on an H100): tg.tune_matmul's choice beside tg.matmul's pick at two ragged shapes.
TABLES.append(contender_rows("## Run 282 — 2026", "| shape (run 282, H100) |", "2026-12-07-run282-tuned.json",
                             [(shape, ["cuBLAS", "tg.matmul", "tg.matmul tuned"])
                              for shape in [(2500, 3504, 1504), (3000, 5000, 2000)]], CALL_COLUMNS))

# Run 285 (on an H100): tuning at four shapes whose operands' rows start mid-line (the benchmark's two rows per shape).
TABLES.append(Table("## Run 285 — 2026", "| shape (run 285, H100) |", "2026-12-07-run285-tuned.json",
                    [dict(shape=shape, dtype=dtype) for dtype in (F16, BF16)
                     for shape in [(3333, 2224, 1112), (640, 6000, 4000), (2500, 3504, 1504), (3000, 5000, 2000)]],
                    [Column(4, "tg.matmul", "vs_cublas", dict(contender="tg.matmul")),
                     Column(5, "tg.matmul tuned", "vs_cublas", dict(contender="tg.matmul tuned"))]))

# Run 286 (on an H100): tuning's choice beside the pick at 640x6000x4000 after tuning's candidates changed.
TABLES.append(every_row("## Run 286 — 2026", "| shape (run 286, H100) |", "2026-12-07-run286-tuned.json",
                        CALL_COLUMNS))

# Run 293 (on an H100): the block-scaled designs at 4096x8192x4096 beside tg.tune_matmul's choice.
TABLES.append(every_row("## Run 293 — 2026", "| shape (run 293, H100) | scaling |",
                        "2026-12-07-run293-block-designs.json", FP8_COLUMNS))

# Run 296 (on an H200): the issue-12 table in one process (with the bandwidth fraction), the fp8 table, and
# tg.tune_matmul's choice beside the pick at two ragged shapes.
RUN_296 = issue_12_run("## Run 296 — 2026", "2026-12-07-run296-shapes.json")
TABLES += [replace(RUN_296, columns=RUN_296.columns + [Column(4, "bandwidth fraction f16", "bw_fraction",
                                                              dict(contender="tg.matmul", dtype=F16))]),
           every_row("## Run 296 — 2026", "| shape (run 296) | scaling |", "2026-12-07-run296-fp8.json", FP8_COLUMNS),
           every_row("## Run 296 — 2026", "| shape (run 296) | dtype |", "2026-12-07-run296-tuned.json",
                     CALL_COLUMNS)]
