"""benchmarks/rounds.py off the GPU: how many calls a timed loop makes, and the interleaved rounds."""

import pytest

torch = pytest.importorskip("torch")
import rounds  # noqa: E402


@pytest.fixture
def timed(monkeypatch):
    """A fake fn whose first call is slow (cuBLAS set up) and later ones take 0.03 ms, timed without a GPU."""
    log = []

    def fn():
        log.append("call")

    def loop_ms(f, iters):
        for _ in range(iters):
            f()
        return 20.0 if log.count("call") == iters else 0.03   # only a loop that includes the first call is slow
    monkeypatch.setattr(rounds, "loop_ms", loop_ms)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    return fn, log


def test_a_loop_is_sized_from_a_warm_call_not_the_first(timed):
    fn, log = timed
    assert rounds.loop_iterations(fn, budget_ms=75) == 200   # 75 ms / 0.03 ms, at most 200
    assert log[:2] == ["call", "sync"]   # the warm call and its end come before the timed probe


@pytest.mark.parametrize("budget_ms,least,most,expected", [(0.06, 5, 200, 5), (0.9, 5, 200, 30), (75, 5, 100, 100)])
def test_a_loop_makes_budget_over_a_call_calls_within_its_bounds(timed, budget_ms, least, most, expected):
    fn, _ = timed
    assert rounds.loop_iterations(fn, budget_ms, least=least, most=most) == expected


def test_every_round_times_every_contender_once_in_a_new_order():
    seen = []
    samples = rounds.interleaved(["a", "b", "c"], 4, lambda name, r: seen.append((r, name)) or r)
    assert samples == {name: [0, 1, 2, 3] for name in "abc"}
    orders = [tuple(name for r, name in seen if r == i) for i in range(4)]
    assert all(sorted(order) == ["a", "b", "c"] for order in orders) and len(set(orders)) > 1
