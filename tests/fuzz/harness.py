"""Runs every fuzz case in worker processes, so a fault takes down one worker and never the rest.

Cases are dealt to `workers` processes; each appends its results as it goes. A
worker that dies leaves its current case marked as a fault and its remaining
cases to a fresh worker. The summary counts each outcome (tests/fuzz/worker.py).
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

from .cases import BAD, GOOD
from .worker import all_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(good_count, workers, timeout_s=1500):
    """Runs every case; returns (summary dict, list of result dicts)."""
    total = len(all_cases(good_count))
    results = {}
    pending = [list(range(w, total, workers)) for w in range(workers)]
    with tempfile.TemporaryDirectory() as scratch:
        deadline = time.time() + timeout_s
        while pending and time.time() < deadline:
            running = []
            for n, group in enumerate(pending):
                path = os.path.join(scratch, f"w{len(results)}-{n}-{time.time_ns()}.jsonl")
                cmd = [sys.executable, "-m", "tests.fuzz.worker", path, str(good_count), *map(str, group)]
                running.append((group, path, subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                                              stderr=subprocess.PIPE, text=True)))
            pending = []
            for group, path, proc in running:
                _, stderr = proc.communicate(timeout=max(1, deadline - time.time()))
                done = _read(path)
                results.update(done)
                left = [i for i in group if i not in done]
                if left:   # the worker died inside a case: that case faulted, the rest go to a new worker
                    results[left[0]] = dict(index=left[0], name=all_cases(good_count)[left[0]][0],
                                            kind=all_cases(good_count)[left[0]][1], outcome="fault",
                                            detail=f"the worker died (exit {proc.returncode}): {stderr[-500:]}")
                    if left[1:]:
                        pending.append(left[1:])
    return summarize(results, total), sorted(results.values(), key=lambda r: r["index"])


def _read(path):
    done = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                done[record["index"]] = record
    return done


def summarize(results, total):
    counts = collections.Counter((r["kind"], r["outcome"]) for r in results.values())
    return dict(
        cases=total, run=len(results),
        fuzz_bad_calls=sum(v for (kind, _), v in counts.items() if kind == BAD),
        fuzz_wrong_error_type=counts[(BAD, "wrong_error_type")],
        fuzz_silent=counts[(BAD, "silent")] + counts[(GOOD, "silent")],
        fuzz_faults=sum(v for (_, outcome), v in counts.items() if outcome == "fault"),
        fuzz_good_shapes=sum(v for (kind, _), v in counts.items() if kind == GOOD),
        fuzz_good_correct=counts[(GOOD, "correct")],
        good_refused=counts[(GOOD, "refused_legal")], good_errors=counts[(GOOD, "error")],
    )
