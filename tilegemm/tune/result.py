"""What the tuner returns: every candidate with its fate, the ranking, and the winner."""
from dataclasses import dataclass

ILLEGAL = "illegal"       # the verifier or the model rejected it; never compiled
RANKED = "ranked"         # legal, ranked by the model, not measured
MEASURED = "measured"     # measured now
CACHED = "cached"         # measured before; the time comes from the on-disk cache
FAILED = "failed"         # measuring raised (e.g. compilation failed)


@dataclass
class Candidate:
    """One point of the search space: its parameters, what happened to it and its times."""
    params: dict
    status: str = RANKED
    reason: str = ""
    kernel: object = None
    graph: object = None
    budget: object = None
    measured_s: float = None

    @property
    def predicted_s(self):
        return self.budget.predicted_s if self.budget is not None else None

    @property
    def seconds(self):
        """The measured time when there is one, else the model's prediction."""
        return self.measured_s if self.measured_s is not None else self.predicted_s

    def describe(self):
        return " ".join(f"{k}={v}" for k, v in self.params.items())


def rank_key(cand):
    """Fastest predicted first; on equal predictions, the one moving fewer bytes (more headroom) first."""
    return cand.predicted_s, cand.budget.dram_time_s + cand.budget.l2_time_s


@dataclass
class TuneResult:
    """The tuning outcome. `best` is the fastest measured candidate, or the model's favourite when nothing
    was measured (`measured` is then False: its time is a prediction, not a measurement)."""
    shape: tuple
    device: object
    candidates: list
    best: Candidate
    measured: bool

    @property
    def ranked(self):
        """Legal candidates, fastest predicted first."""
        return sorted((c for c in self.candidates if c.status != ILLEGAL), key=rank_key)

    @property
    def illegal(self):
        return [c for c in self.candidates if c.status == ILLEGAL]

    def table(self):
        """The ranking as text: predicted and measured times per legal candidate, then the illegal ones."""
        m, n, k = self.shape
        flops = 2 * m * n * k
        kind = "measured" if self.measured else "PREDICTED by the model, not measured"
        lines = [f"tune {m}x{n}x{k} on {self.device.name}: best {self.best.describe()} "
                 f"{self.best.seconds * 1e3:.3f} ms ({kind})",
                 f"{'rank':<5}{'predicted':>12}{'TFLOP/s':>9}{'measured':>12}{'TFLOP/s':>9}  {'status':<9} params"]
        for i, c in enumerate(self.ranked, 1):
            measured = (f"{c.measured_s * 1e3:9.3f} ms{flops / c.measured_s / 1e12:9.1f}"
                        if c.measured_s is not None else f"{'-':>12}{'':>9}")
            lines.append(f"{i:<5}{c.predicted_s * 1e3:9.3f} ms{flops / c.predicted_s / 1e12:9.1f}{measured}  "
                         f"{c.status:<9} {c.describe()}" + (f"  ({c.reason})" if c.reason else ""))
        for c in self.illegal:
            lines.append(f"{'-':<5}{'illegal':>12}{'':>9}{'':>12}{'':>9}  {c.status:<9} {c.describe()}: "
                         f"{c.reason.splitlines()[0]}")
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def __repr__(self):
        m, n, k = self.shape
        return (f"<tg.tune.TuneResult {m}x{n}x{k} on {self.device.name}: best {self.best.describe()}, "
                f"{self.best.seconds * 1e3:.3f} ms {'measured' if self.measured else 'predicted'}>")

    def _repr_html_(self):
        from ..notebook import tune_html
        return tune_html(self)

    def _repr_markdown_(self):
        from ..notebook import tune_markdown
        return tune_markdown(self)
