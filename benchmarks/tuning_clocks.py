"""The SM clock and power under each of tg.tune_matmul's timed batches, beside short batches of the same designs.

Runs 259 and 267 found tuning's 100 ms batches timing the model's pick ~5% slower than
benchmarks/bench_fp8.py's CUDA-graph rounds, while the other designs moved less. This
script asks why: it samples `nvidia-smi` (SM clock, power) every SAMPLE_MS while
tg.tune_matmul (record=False) times its candidates on one fp8 call, attributing each
sample to the batch that ran then (tuning's `time_kernel`, wrapped to note each
batch's host time span and kernel); then it runs tuning's timing again on the same
candidates with SHORT_MS batches instead of ROUND_MS, about a CUDA-graph replay's
length, sampled alike; then once more with ROUND_MS batches of CUDA-graph replays
(GRAPH_LAUNCHES launches a graph, as the benchmarks time kernels) instead of launches
from the host. It prints, per phase ("tuning", "short", "graph": each design's timed
batches; "... lead": the pick's untimed batches before them), the median ms per
launch and the mean clock and power of those batches, and writes them to
OUT/tuning-clocks-*.json.

    python3 benchmarks/tuning_clocks.py --out out [--shape 4096x7168x16384] [--scaling block] [--rounds 7]
"""
import argparse
import dataclasses
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_fp8 import SCALINGS, operands  # noqa: E402
from decode_grid import parse_shapes  # noqa: E402

SAMPLE_MS = 20
GRAPH_LAUNCHES = 10   # launches per CUDA graph the "graph" phase replays
SHORT_MS = 40.0       # about the GPU time of one of bench_fp8's CUDA-graph replays (200 ms over 5 rounds)
QUERY = "timestamp,clocks.sm,power.draw"


class Sampler:
    """nvidia-smi sampling QUERY every SAMPLE_MS into a temporary file, read back as (host seconds, MHz, W)."""

    def __enter__(self):
        self.file = tempfile.NamedTemporaryFile("w+", suffix=".csv")
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                                      "-lms", str(SAMPLE_MS)], stdout=self.file, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        time.sleep(0.1)
        self.proc.terminate()
        self.proc.wait()
        self.file.seek(0)
        self.samples = parse_samples(self.file)
        self.file.close()

    def during(self, start, end):
        """The (MHz, W) samples taken between host times `start` and `end`."""
        return [(mhz, watts) for when, mhz, watts in self.samples if start <= when <= end]


def parse_samples(lines):
    """[(host seconds, MHz, W)] of nvidia-smi's QUERY lines (csv, no header, no units); lines it could not finish
    (the last, cut by terminate) are left out."""
    samples = []
    for line in lines:
        fields = [field.strip() for field in line.split(",")]
        try:
            when = datetime.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((when, float(fields[1]), float(fields[2])))
        except (ValueError, IndexError):
            continue
    return samples


class BatchLog:
    """Wraps a time_kernel: each call's kernel, host time span and ms per launch, in order."""

    def __init__(self, time_kernel):
        self.time_kernel, self.batches = time_kernel, []

    def __call__(self, fn, warmup=3, iters=20, stream=None):
        start = time.time()
        ms = self.time_kernel(fn, warmup=warmup, iters=iters, stream=stream)
        self.batches.append(dict(fn=fn, start=start, end=time.time(), ms=ms, iters=iters))
        return ms


def logged(timing, *args, round_ms=None):
    """Runs `timing(*args)` with tuning's time_kernel wrapped (and its ROUND_MS replaced by `round_ms`): its result
    and the batches it timed."""
    from tilegemm.ops import tuning
    log, kept = BatchLog(tuning.time_kernel), tuning.ROUND_MS
    tuning.time_kernel, tuning.ROUND_MS = log, round_ms or kept
    try:
        return timing(*args), log.batches
    finally:
        tuning.time_kernel, tuning.ROUND_MS = log.time_kernel, kept


def tune(a8, w8, sa, sb):
    """tg.tune_matmul (not recorded) of the scaled call."""
    import tilegemm as tg
    return tg.tune_matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, record=False)


def tuning_phases(trials, batches):
    """tuning._time's batches split into (each trial's timed batches, the pick's untimed batches before them): one
    probe batch per trial first, then per round and trial the pick untimed and that trial timed."""
    rounds = batches[len(trials):]
    return rounds[1::2], rounds[0::2]


def retime(trials, stream, rounds):
    """tuning._time again on the same trials (their earlier samples dropped)."""
    from tilegemm.ops import tuning
    for t in trials:
        t.samples = []
    tuning._time(trials, stream, rounds)


def graphed(trials, launches):
    """Copies of `trials` whose launch replays a CUDA graph of `launches` of the trial's own launches (captured on
    torch's current stream, where the trial launches)."""
    copies = []
    for t in trials:
        t.launch()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(launches):
                t.launch()
        copies.append(dataclasses.replace(t, launch=graph.replay, samples=[]))
    torch.cuda.synchronize()
    return copies


def rows(phase, trials, batches, sampler, launches=1):
    """Per trial: its batches' median ms per launch (each call of its launch runs `launches` kernels), mean SM MHz
    and W over the samples taken during them."""
    found = []
    for i, t in enumerate(trials):
        mine = [b for b in batches if b["fn"] is t.launch]
        samples = [s for b in mine for s in sampler.during(b["start"], b["end"])]
        found.append(dict(phase=phase, design=t.label, pick=i == 0, batches=len(mine),
                          ms=statistics.median(b["ms"] for b in mine) / launches if mine else None,
                          mhz=statistics.fmean(s[0] for s in samples) if samples else None,
                          watts=statistics.fmean(s[1] for s in samples) if samples else None,
                          samples=len(samples)))
    return found


def main():
    from tilegemm.runtime.launch import launch_stream
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=parse_shapes, default=[(4096, 7168, 16384)], metavar="MxNxK")
    p.add_argument("--scaling", choices=SCALINGS, default="block")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    (m, n, k), = args.shape
    ops = operands(m, n, k, args.scaling)[:4]   # a8, w8, scale_a, scale_b
    with Sampler() as during_tuning:
        tuning, tuned_batches = logged(tune, *ops)
    print(repr(tuning))
    trials = [t for t in tuning.trials if t.reason is None]
    stream = launch_stream(ops)
    with Sampler() as during_short:
        _, short_batches = logged(retime, trials, stream, args.rounds, round_ms=SHORT_MS)
    replays = graphed(trials, GRAPH_LAUNCHES)
    with Sampler() as during_graphs:
        _, graph_batches = logged(retime, replays, stream, args.rounds)
    table = []
    for phase, phase_trials, batches, sampler, launches in (
            ("tuning", trials, tuned_batches, during_tuning, 1), ("short", trials, short_batches, during_short, 1),
            ("graph", replays, graph_batches, during_graphs, GRAPH_LAUNCHES)):
        timed, leads = tuning_phases(phase_trials, batches)
        table += (rows(phase, phase_trials, timed, sampler, launches)
                  + rows(f"{phase} lead", phase_trials[:1], leads, sampler, launches))
    print(f"{'phase':12s} {'design':70s} {'batches':>7s} {'ms':>8s} {'MHz':>6s} {'W':>6s}")
    for r in table:
        print(f"{r['phase']:12s} {('* ' if r['pick'] else '  ') + r['design']:70s} {r['batches']:7d} "
              f"{r['ms'] or float('nan'):8.4f} {r['mhz'] or float('nan'):6.0f} {r['watts'] or float('nan'):6.1f}")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"tuning-clocks-{datetime.datetime.now():%Y%m%d-%H%M%S}.json")
    with open(path, "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(), shape=[m, n, k], scaling=args.scaling,
                       rounds=args.rounds, sample_ms=SAMPLE_MS, short_ms=SHORT_MS, graph_launches=GRAPH_LAUNCHES,
                       rows=table), f, indent=1)
    print(path)


if __name__ == "__main__":
    main()
