"""Writes a benchmark run as JSON, a markdown table and a PNG chart (ladder bars, cuBLAS line).

    python3 benchmarks/report.py benchmarks/results/<run>.json     # redraw the table and chart of a saved run
    python3 benchmarks/report.py --tables ["Run 7"]                # RESULTS.md's measured tables, from the JSON
"""
import argparse
import json
import math
import os


def markdown(meta, rows):
    """The run as a markdown table, one row per (shape, dtype, contender)."""
    lines = [f"{meta['date']} on {meta['device']} (torch {meta['torch']}, CUDA {meta['cuda']}): "
             f"{meta['timing']}; {meta['inputs']} inputs", "",
             "| shape | dtype | contender | ms | TFLOP/s | vs cuBLAS | rel. error |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['m']}x{r['n']}x{r['k']} | {r['dtype']} | {r['contender']} | {r['ms']:.4f} | "
                     f"{r['tflops']:.1f} | {r['vs_cublas']:.3f}x | {r['rel_error']:.1e} |")
    means = geometric_means(rows)
    if means:
        lines += ["", "Geometric mean of the ratio to cuBLAS over the shapes each contender ran:", "",
                  "| contender | dtype | shapes | geometric mean vs cuBLAS |", "|---|---|---|---|"]
        lines += [f"| {name} | {dtype} | {count} | {mean:.3f}x |" for (name, dtype), (mean, count) in means.items()]
    return "\n".join(lines + model_against_measured(rows))


def model_against_measured(rows):
    """Markdown lines setting the model's predicted time beside the measured one, for the rows that carry a
    prediction (bench_hopper.py --all-designs); none when no row does."""
    predicted = [r for r in rows if "predicted_us" in r]
    if not predicted:
        return []
    lines = ["", "The model's predicted time against the measured one (tg.matmul: its pick):", "",
             "| shape | dtype | contender | design | predicted us | measured us | measured/predicted | vs cuBLAS |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['m']}x{r['n']}x{r['k']} | {r['dtype']} | {r['contender']} | {r['design']} | "
              f"{r['predicted_us']:.1f} | {r['measured_us']:.1f} | {r['measured_over_predicted']:.3f} | "
              f"{r['vs_cublas']:.3f}x |" for r in predicted]
    return lines


def geometric_means(rows):
    """{(contender, dtype): (geometric mean of vs_cublas, shapes)} for contenders run once on each of several shapes.

    A contender timed twice on one shape (in two jobs of a run) gets no mean: it would weigh that shape twice.
    """
    ratios = {}
    for r in rows:
        if r["contender"] != "cuBLAS":
            ratios.setdefault((r["contender"], r["dtype"]), {}).setdefault((r["m"], r["n"], r["k"]), []).append(
                r["vs_cublas"])
    return {key: (math.exp(sum(math.log(v[0]) for v in shapes.values()) / len(shapes)), len(shapes))
            for key, shapes in ratios.items() if len(shapes) > 1 and all(len(v) == 1 for v in shapes.values())}


def chart(path, meta, rows):
    """One bar chart per benchmark job (shape and dtype) with cuBLAS as a dashed line; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    jobs = sorted({r["job"] for r in rows})
    fig, axes = plt.subplots(len(jobs), 1, figsize=(9, 3.2 * len(jobs)), squeeze=False)
    for ax, job in zip(axes[:, 0], jobs):
        sel = [r for r in rows if r["job"] == job and r["contender"] != "cuBLAS"]
        cub = next(r for r in rows if r["job"] == job and r["contender"] == "cuBLAS")
        ax.bar([r["contender"] for r in sel], [r["tflops"] for r in sel], color="#4a7ab5")
        ax.axhline(cub["tflops"], color="#c0392b", linestyle="--", label=f"cuBLAS {cub['tflops']:.0f} TFLOP/s")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{cub['m']}x{cub['n']}x{cub['k']} {cub['dtype']} on {meta['device']}")
        ax.legend(loc="lower right")
        ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def write_outputs(stem, meta, rows):
    """Writes stem.json, stem.md and (with matplotlib) stem.png; returns the markdown table."""
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    with open(stem + ".json", "w") as f:
        json.dump(dict(meta=meta, results=rows), f, indent=1)
    table = markdown(meta, rows)
    with open(stem + ".md", "w") as f:
        f.write(table + "\n")
    if not chart(stem + ".png", meta, rows):
        table += "\n(matplotlib is not installed: no chart)"
    return table


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", help="saved runs (JSON) whose markdown table and chart to write again")
    p.add_argument("--tables", nargs="?", const="", metavar="SECTION",
                   help="print RESULTS.md's measured tables regenerated from the JSON (those of SECTION, e.g. 'Run 7')")
    args = p.parse_args()
    if args.tables is not None:
        import tables
        print("\n\n".join(tables.render(t) for t in tables.tables(args.tables or None)))
    for path in args.runs:
        with open(path) as f:
            run = json.load(f)
        print(write_outputs(os.path.splitext(path)[0], run["meta"], run["results"]))


if __name__ == "__main__":
    main()
