"""benchmarks/RESULTS.md agrees with the committed JSON: every measured table, the summary and the standing."""
import glob
import json
import os
import re
import statistics

import pytest

tables = pytest.importorskip("tables")
report = pytest.importorskip("report")

with open(tables.RESULTS_MD) as f:
    RESULTS = f.read()

# Runs whose JSON backs prose rather than a table: run 2's lever table summarises its rows in words (its geometric
# means are checked with session 2's standing), run 13 lists its suite in a bullet (test_run_13s_suite_bullet...).
PROSE_ONLY = {"2026-11-29-run2-explore.json", "2026-11-29-run13-suite.json",
              "2026-12-01-run20-fuzz.json", "2026-12-01-run21-sanitizer-as-parsed.json",   # checked below
              "2026-12-01-run23-fuzz.json", "2026-12-01-run24-sanitizer.json",
              # run 25 measured branch snapshots before they merged; run 28's epilogue figures are quoted in prose
              "2026-12-01-run25-decode-branch.json", "2026-12-01-run25-epilogue-branch.json",
              "2026-12-01-run28-epilogue.json",
              # run 93's rewritten promotion leaked into its other contender: quoted in prose
              "2026-12-02-run93-block-uncontracted.json",
              # run 30's fuzz suite ran a stale case list (a 3-D a became a legal batched call): quoted in prose
              "2026-12-01-run30-fuzz.json",
              # run 31 timed a design family that was then withdrawn (clusters of 64-row tiles): quoted in prose
              "2026-12-01-run31-designs.json",
              # run 33's reverted experiment (two partial accumulators): quoted in prose
              "2026-12-01-run33-fp8-block-two-partials.json",
              # run 34's fuzz and sanitizer summaries are quoted in prose; run 35's reverted experiments too
              "2026-12-01-run34-fuzz.json", "2026-12-01-run34-sanitizer.json",
              "2026-12-01-run35-fp8-block-turns-after-issue.json", "2026-12-01-run35-fp8-block-turns-after-wait.json",
              "2026-12-01-run35-fp8-block-first-step-lag.json",
              # run 38's clusters-of-two experiment (a scratch wrapper, not adopted): quoted as a summary table
              "2026-12-01-run38-fp8-clusters.json",
              # run 48's split-K reduction widths (a scratch driver timing the reduction alone): quoted as a table
              "2026-12-01-run48-splitk-reduce.json",
              # run 50's fuzz summary is quoted in prose
              "2026-12-01-run50-fuzz.json", "2026-12-01-run53-fuzz.json",
              # run 57's fuzz and sanitizer summaries are quoted in prose
              "2026-12-01-run57-fuzz.json", "2026-12-01-run57-sanitizer.json",
              # run 58's per-kernel times (a scratch driver's profile) are quoted in prose
              "2026-12-01-run58-kernel-times.json", "2026-12-01-run61-sanitizer.json",
              "2026-12-01-run66-sanitizer.json", "2026-12-01-run68-sanitizer.json", "2026-12-01-run68-fuzz.json",
              # run 60's cluster trials (parsed from its tuning log, beside the model's predictions): in prose
              "2026-12-01-run60-cluster-trials.json",
              # run 73's stream-K timing in a plain loop (superseded by run 75's table): in prose
              "2026-12-01-run73-stream-k-loop.json",
              "2026-12-01-run77-sanitizer.json", "2026-12-01-run77-fuzz.json",
              # run 83's staggered drains are quoted in prose; run 86's fuzz report beside its GPU tests
              "2026-12-02-run83-block-stagger.json", "2026-12-02-run86-fuzz.json",
              # run 105's sanitizer summary is quoted in prose
              "2026-12-02-run105-sanitizer.json",
              # run 117's sanitizer summary is quoted in prose
              "2026-12-02-run117-sanitizer.json",
              # the sanitizer summaries of runs 195 and 203 are quoted in prose
              "2026-12-06-run195-sanitizer.json", "2026-12-06-run203-sanitizer.json",
              # run 122's fuzz report is quoted in prose
              "2026-12-02-run122-fuzz.json",
              # run 128's sanitizer summary is quoted in prose
              "2026-12-02-run128-sanitizer.json",
              # run 131's sanitizer summary is quoted in prose
              "2026-12-02-run131-sanitizer.json",
              # run 135's sanitizer summary (every target) is quoted in prose
              "2026-12-02-run135-sanitizer.json",
              # run 139's sanitizer summary (the filling designs) is quoted in prose
              "2026-12-02-run139-sanitizer.json",
              # run 143's sanitizer summary (the swapped families after stmatrix.trans) is quoted in prose
              "2026-12-02-run143-sanitizer.json", "2026-12-02-run150-sanitizer.json",
              "2026-12-03-run176-sanitizer.json", "2026-12-03-run183-sanitizer.json",
              "2026-12-03-run184-sanitizer.json",
              # runs 164-167: experiments through a scratch hook whose tables set several processes' times (us)
              # and ratios side by side, or a line fitted through them; their cells are quoted from these files
              "2026-12-03-run164-prefetch-b0.json", "2026-12-03-run165-decode-lines.json",
              "2026-12-03-run166-pdl-off.json", "2026-12-03-run166-pdl-on.json",
              "2026-12-03-run167-pdl-off.json", "2026-12-03-run167-pdl-wait.json", "2026-12-03-run167-pdl-early.json",
              "2026-12-03-run170-trigger-off.json", "2026-12-03-run170-trigger-producer.json",
              # run 174: bench_calls.py in six processes of three launch modes (scratch hook), side by side
              *(f"2026-12-03-run174-calls-{mode}-{n}.json" for mode in ("committed", "notrigger", "nopdl") for n in (1, 2))}
# The runs 11-17 jobs that timed the final kernel (128x192 ping-pong) at 8192^3 as flagship and tg.matmul rows.
FINAL_KERNEL_RUNS = ["run11-quick", "run11-suite", "run12-ladder-quick", "run13-suite", "run15-quick",
                     "run16-quick-shuffled", "run17-suite-shuffled"]
CUBE = (8192, 8192, 8192)


def results(run):
    return tables.load_results(f"2026-11-29-{run}.json")


def ratio(rows, contender, dtype, shape=CUBE, job=None):
    (found,) = [r for r in rows if (r["contender"], r["dtype"], (r["m"], r["n"], r["k"])) == (contender, dtype, shape)
                and job in (None, r["job"])]
    return found["vs_cublas"]


def final_kernel_ratios(dtype):
    """The flagship's and tg.matmul's 8192^3 ratios of runs 11-17, run by run (the --quick or --suite job)."""
    values = []
    for run in FINAL_KERNEL_RUNS:
        rows = results(run)
        (job,) = {r["job"] for r in rows if r["contender"] == "tg.matmul" and r["dtype"] == dtype
                  and (r["m"], r["n"], r["k"]) == CUBE}
        values += [ratio(rows, c, dtype, job=job) for c in ("hopper_flagship", "tg.matmul")]
    return values


def suite_geomean(run, contender, dtype):
    return report.geometric_means(results(run))[(contender, dtype)][0]


def numbers(text):
    return [float(x) for x in re.findall(r"\d+\.\d+", text)]


@pytest.mark.parametrize("table", tables.TABLES, ids=lambda t: f"{t.section} {t.header}")
def test_every_measured_cell_of_a_results_table_is_its_json_at_the_precision_shown(table):
    assert tables.check(table, RESULTS) == []


def test_every_committed_run_backs_a_checked_table():
    committed = {os.path.basename(p) for p in glob.glob(os.path.join(tables.RESULTS_DIR, "*.json"))}
    assert committed - PROSE_ONLY == {t.source.split(":")[0] for t in tables.TABLES}


def test_the_summary_at_the_top_quotes_the_medians_and_geometric_means_of_the_json():
    summary = re.search(r"Latest standing.*?\n\n", RESULTS, re.S).group(0)
    medians = re.search(r"median (\d\.\d+)x \(f16\) and (\d\.\d+)x \(bf16\) cuBLAS over\s+runs 11-17", summary)
    assert medians, summary
    assert [float(m) for m in medians.groups()] == [round(statistics.median(final_kernel_ratios(d)), 3)
                                                    for d in ("float16", "bfloat16")]
    mean = float(re.search(r"geometric mean over the five issue-5 shapes (\d\.\d+)x in both dtypes", summary)[1])
    for run in ("run11-suite", "run13-suite", "run17-suite-shuffled"):
        for dtype in ("float16", "bfloat16"):
            assert round(suite_geomean(run, "tg.matmul", dtype), 2) == mean


def section(heading):
    """The text of a RESULTS.md section, on one line."""
    return " ".join(re.search(rf"## {re.escape(heading)}.*?(?=\n## )", RESULTS, re.S).group(0).split())


def standing():
    return section("Where issue 5 stands")


def test_the_standing_lists_every_final_kernel_measurement_of_runs_11_to_17():
    text = standing()
    for dtype, name in (("float16", "f16"), ("bfloat16", "bf16")):
        listed = re.search(rf"{name} ((?:\d\.\d+, )+\d\.\d+)x \(median (\d\.\d+)x, (\d+) of (\d+) >= 1\.05x\)", text)
        assert listed, f"no {name} list in the standing"
        values = final_kernel_ratios(dtype)
        assert numbers(listed[1]) == [round(v, 3) for v in values]
        assert float(listed[2]) == round(statistics.median(values), 3)
        assert (int(listed[3]), int(listed[4])) == (sum(round(v, 3) >= 1.05 for v in values), len(values))


def test_the_standing_quotes_the_geometric_means_and_the_ladder_of_the_json():
    text = standing()
    means = re.search(r"Geometric mean over the five shapes \(tg\.matmul\): (.*?) f16 / bf16", text, re.S)[1]
    expected = [round(suite_geomean(run, "tg.matmul", d), 3) for run in ("run11-suite", "run13-suite",
                                                                         "run17-suite-shuffled")
                for d in ("float16", "bfloat16")]
    assert [x for x in numbers(means) if x > 1] == expected
    ladder = re.search(r"The ladder at 8192\^3 f16 \(run 18.*?\): (.*?) - ", text)[1]
    rows = results("run18-ladder")
    rungs = ["hopper_v0_naive", "hopper_v1_smem", "hopper_v2_tma_wgmma", "hopper_v3_warp_specialized",
             "hopper_v4_tuned", "hopper_flagship"]
    assert numbers(ladder) == [round(ratio(rows, r, "float16"), 3) for r in rungs]


def test_the_standing_quotes_the_range_of_the_128x256_kernel_over_runs_2_to_5():
    low, high = numbers(re.search(r"The 128x256 kernel of session 2 measured (\d\.\d+)-(\d\.\d+)x", standing())[0])
    measured = [ratio(results(run), "hopper_flagship", d) for run in ("run3-suite", "run4-quick",
                                                                     "run5-quick-rotated")
                for d in ("float16", "bfloat16")]
    measured += [ratio(tables.load_results("2026-11-29-run2-explore.json:" + part), "flagship", d)
                 for part in ("final", "levers") for d in ("float16", "bfloat16")]
    assert (low, high) == (round(min(measured), 3), round(max(measured), 3))


def test_session_2s_standing_quotes_run_2s_geometric_means():
    stood = section("Where issue 5 stood at the end of session 2")
    run2 = re.search(r"(\d\.\d+)x / (\d\.\d+)x in run 2", stood)
    final = tables.load_results("2026-11-29-run2-explore.json:final")
    assert [float(x) for x in run2.groups()] == [round(report.geometric_means(final)[("flagship", d)][0], 3)
                                                 for d in ("float16", "bfloat16")]


def test_run_13s_suite_bullet_quotes_its_json():
    bullet = re.search(r"--suite \(tg\.matmul\): (.*?)\(f16 / bf16\); geometric means (.*?)\. The fixed-configuration "
                       r"flagship: 8192\^3 (\d\.\d+x / \d\.\d+x)", section("Run 13 — 2026"))
    rows = results("run13-suite")
    dtypes = ("float16", "bfloat16")
    assert numbers(bullet[1].replace("**", "")) == [round(ratio(rows, "tg.matmul", d, shape), 3)
                                                    for shape in tables.SHAPES for d in dtypes]
    assert numbers(bullet[2]) == [round(suite_geomean("run13-suite", "tg.matmul", d), 3) for d in dtypes]
    assert numbers(bullet[3]) == [round(ratio(rows, "hopper_flagship", d), 3) for d in dtypes]


def test_the_fuzz_and_sanitizer_figures_of_runs_23_and_24_are_their_json():
    fuzz = json.load(open(os.path.join(tables.RESULTS_DIR, "2026-12-01-run23-fuzz.json")))["summary"]
    run23 = section("Run 23 — 2026")
    assert f"| bad calls | {fuzz['fuzz_bad_calls']} | {fuzz['fuzz_bad_calls']} refused with a tg error; " \
           f"{fuzz['fuzz_wrong_error_type']} wrong error types" in run23
    assert f"| {fuzz['fuzz_good_shapes']} | {fuzz['fuzz_good_correct']} correct; {fuzz['fuzz_silent']} silent" in run23
    assert f"| faults | | {fuzz['fuzz_faults']} |" in run23
    sanitizer = json.load(open(os.path.join(tables.RESULTS_DIR, "2026-12-01-run24-sanitizer.json")))
    assert sanitizer["sanitizer_errors"] == 0 and "**0 errors** from each" in section("Run 24 — 2026")
    calls = json.load(open(os.path.join(tables.RESULTS_DIR, "2026-12-01-run23-calls.json")))["host_overhead"]
    assert f"**{calls['call_overhead_us']:.1f} us of\nhost time above the kernel**".replace("\n", " ") in run23
