"""Contenders timed in interleaved rounds: every round times each once, in a new random order.

A contender's time depends on the clock and power state the one before it left. Rotating a fixed order moved every
contender through every position but kept its predecessor: tg.matmul, always right after the flagship, measured
0.5-2.5% slower than that same binary (RESULTS.md runs 12-15). So the order is drawn anew every round.
"""
import random

import torch


def loop_ms(fn, iters):
    """Milliseconds per call of `iters` calls of fn() in a plain loop between CUDA events (host time included)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def loop_iterations(fn, budget_ms, least=5, most=200):
    """Calls of fn() per timed loop (`loop_ms`) for a loop of about `budget_ms`, from `least` to `most`: timed
    after a warm call, since a process's first GEMM of a dtype sets cuBLAS up (timed cold, the first shape of
    bench_calls.py got loops of 5 calls, in which the first call's host time weighs a fifth: RESULTS.md run 174)."""
    fn()
    torch.cuda.synchronize()
    probe = loop_ms(fn, 3)
    return max(least, min(most, int(budget_ms / max(probe, 1e-3))))


def interleaved(names, rounds, time_one, seed=0):
    """{name: [ms of each round it was timed in]}: `rounds` rounds, each calling time_one(name, round) for every
    name in an order shuffled by a generator seeded `seed`; a None from time_one records nothing (a contender
    timed in fewer rounds)."""
    samples = {name: [] for name in names}
    order = random.Random(seed)
    for r in range(rounds):
        names_now = list(samples)
        order.shuffle(names_now)
        for name in names_now:
            ms = time_one(name, r)
            if ms is not None:
                samples[name].append(ms)
    return samples
