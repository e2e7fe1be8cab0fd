"""Session-wide defaults of `check`, set by the pytest plugin's options (or by `configure`)."""
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Defaults:
    """`shuffled_schedules`: interpreter runs per case besides the deterministic schedule (--tg-seeds N);
    `interpret_only`: never run on the GPU (--tg-interpret-only)."""
    shuffled_schedules: int = 2
    interpret_only: bool = False

    def schedule_seeds(self):
        """The interpreter's schedule seeds `check` uses when given none: None (deterministic), 1, 2, ..."""
        return (None,) + tuple(range(1, self.shuffled_schedules + 1))


_current = Defaults()


def current():
    """The defaults in force."""
    return _current


def configure(*, shuffled_schedules=None, interpret_only=None):
    """Changes the defaults `check` uses from now on (None keeps a setting); returns the previous Defaults."""
    global _current
    if shuffled_schedules is not None and (not isinstance(shuffled_schedules, int) or shuffled_schedules < 0):
        raise ValueError(f"shuffled_schedules must be an int >= 0, got {shuffled_schedules!r}")
    previous = _current
    changes = dict(shuffled_schedules=shuffled_schedules, interpret_only=interpret_only)
    _current = replace(_current, **{name: value for name, value in changes.items() if value is not None})
    return previous


def restore(defaults):
    """Puts back Defaults that `configure` returned."""
    global _current
    _current = defaults
