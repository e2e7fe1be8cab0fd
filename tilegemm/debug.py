"""Debugging switches for GPU runs: NaN-poisoned outputs and bounded barrier waits.

Both cost time, so both are off unless asked for:

    c = kernel(a, b, debug=True)              # this call: poison outputs, barrier waits give up after 10 s
    tg.set_debug(poison_outputs=True)         # this process
    TILEGEMM_DEBUG=1 / TILEGEMM_POISON=1 / TILEGEMM_BARRIER_TIMEOUT=2.5   # the environment (read at import)

* Poisoned outputs are filled with NaN before the kernel runs, so an element it
  fails to write shows up instead of passing as stale memory.
* With a barrier timeout, every barrier wait in the compiled kernel gives up
  after that many seconds: the kernel records which barrier, which block and
  which source line, and traps; the call raises tg.HangError saying so. A hang
  becomes an error instead of a frozen process (the trap leaves the CUDA context
  unusable, so the process should exit after it). It is a different binary,
  compiled and cached beside the normal one.
"""
import os
from dataclasses import dataclass, replace

from .errors import ArgumentError

DEFAULT_BARRIER_TIMEOUT = 10.0  # seconds: far beyond any legal wait of a kernel that finishes


@dataclass(frozen=True)
class Debug:
    """Debugging switches of one call: `poison_outputs` (bool) and `barrier_timeout` (seconds or None)."""
    poison_outputs: bool = False
    barrier_timeout: float = None

    def __post_init__(self):
        t = self.barrier_timeout
        if t is not None and not (isinstance(t, (int, float)) and t > 0):
            raise ValueError(f"barrier_timeout must be a positive number of seconds or None, got {t!r}")


ALL = Debug(poison_outputs=True, barrier_timeout=DEFAULT_BARRIER_TIMEOUT)


def _from_environment():
    if os.environ.get("TILEGEMM_DEBUG", "0") not in ("", "0"):
        return ALL
    timeout = os.environ.get("TILEGEMM_BARRIER_TIMEOUT")
    return Debug(poison_outputs=os.environ.get("TILEGEMM_POISON", "0") not in ("", "0"),
                 barrier_timeout=float(timeout) if timeout else None)


_process = _from_environment()


def set_debug(poison_outputs=None, barrier_timeout=None):
    """Sets this process's debugging switches (None keeps a switch as it is, barrier_timeout=False turns it
    off); returns the previous Debug."""
    global _process
    previous = _process
    changes = {k: v for k, v in (("poison_outputs", poison_outputs), ("barrier_timeout", barrier_timeout))
               if v is not None}
    if changes.get("barrier_timeout") is False:
        changes["barrier_timeout"] = None
    _process = replace(_process, **changes)
    return previous


def get_debug():
    """This process's debugging switches."""
    return _process


def resolve(debug):
    """The switches of one call: `debug` as given to a call (None, a bool or a Debug) over the process's."""
    if debug is None:
        return _process
    if isinstance(debug, Debug):
        return debug
    if isinstance(debug, bool):
        return ALL if debug else Debug()
    raise ArgumentError(f"debug= must be True, False, None or a tg.Debug, got {type(debug).__name__} {debug!r}")
