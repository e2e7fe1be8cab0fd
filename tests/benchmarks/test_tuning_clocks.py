"""benchmarks/tuning_clocks.py off the GPU: nvidia-smi's samples read back, and each sample and batch of
tg.tune_matmul's timing attributed to the design that ran it."""
import importlib
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def clocks():
    return importlib.import_module("tuning_clocks")   # after the importorskip above


def test_samples_are_read_with_their_time_and_a_cut_last_line_is_left_out(clocks):
    samples = clocks.parse_samples(["2026/12/07 08:30:00.100, 1980, 650.25\n",
                                    "2026/12/07 08:30:00.120, 1755, 699.90\n", "2026/12/07 08:30:0"])
    assert [(mhz, watts) for _, mhz, watts in samples] == [(1980.0, 650.25), (1755.0, 699.9)]
    assert samples[1][0] - samples[0][0] == pytest.approx(0.02)


def trials(count):
    return [SimpleNamespace(label=f"design {i}", launch=object(), samples=[]) for i in range(count)]


@pytest.mark.parametrize("round_ms", [None, 40.0])
def test_the_batches_of_tunings_timing_split_into_timed_and_the_picks_leads(clocks, monkeypatch, round_ms):
    from tilegemm.ops import tuning
    designs = trials(3)
    ms = {d.launch: 0.5 + i for i, d in enumerate(designs)}   # so each design runs batches of its own length
    fake, kept = (lambda fn, warmup, iters, stream: ms[fn]), tuning.ROUND_MS
    monkeypatch.setattr(tuning, "time_kernel", fake)
    _, batches = clocks.logged(tuning._time, designs, None, 4, round_ms=round_ms)
    assert tuning.ROUND_MS == kept and tuning.time_kernel is fake   # restored after the timing
    timed, leads = clocks.tuning_phases(designs, batches)
    assert len(timed) == len(leads) == 4 * 3
    assert all(b["fn"] is designs[0].launch for b in leads)
    assert [d.iters for d in designs] == [int((round_ms or kept) / ms[d.launch]) for d in designs]
    for d in designs:   # each design timed once a round, in batches of its own length
        mine = [b for b in timed if b["fn"] is d.launch]
        assert len(mine) == 4 and all(b["iters"] == d.iters for b in mine)


def test_a_rows_clock_and_power_are_the_means_of_the_samples_during_its_batches(clocks):
    designs = trials(2)
    batches = [dict(fn=designs[0].launch, start=0.0, end=1.0, ms=2.0, iters=3),
               dict(fn=designs[1].launch, start=1.5, end=2.5, ms=1.0, iters=3),
               dict(fn=designs[0].launch, start=3.0, end=4.0, ms=4.0, iters=3)]
    sampler = SimpleNamespace(samples=[(0.5, 1900.0, 600.0), (1.2, 1000.0, 1.0), (2.0, 1800.0, 500.0),
                                       (3.5, 1700.0, 700.0)])
    sampler.during = lambda start, end: [(m, w) for t, m, w in sampler.samples if start <= t <= end]
    first, second = clocks.rows("tuning", designs, batches, sampler)
    assert (first["pick"], first["batches"], first["ms"], first["mhz"], first["watts"]) == (True, 2, 3.0, 1800.0,
                                                                                            650.0)
    assert (second["pick"], second["ms"], second["mhz"], second["samples"]) == (False, 1.0, 1800.0, 1)
    graphed = clocks.rows("graph", designs, batches, sampler, launches=4)   # a batch's call ran 4 kernels
    assert [r["ms"] for r in graphed] == [0.75, 0.25]
