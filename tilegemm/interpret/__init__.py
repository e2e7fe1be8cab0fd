"""The numpy interpreter: runs a traced kernel with the real concurrency model, and diagnoses it.

Every block of the grid, every warpgroup ("thread") and, inside core_map, every
warp runs as a cooperative task under a deterministic scheduler (a seed
shuffles it). Shared memory, TMEM and registers are separate stores; mbarriers
keep arrival counts, transaction bytes and phase parity; TMA copies and MMAs
are asynchronous. When every task is blocked it raises tg.DeadlockError
listing what each waits for; when memory is touched while an asynchronous
operation may still use it, or before the barrier guarding it was waited for,
tg.RaceError names both source lines; when a block ends with asynchronous work
it never waited for (a TMA store, a TMEM load, a WGMMA, a TMA load or tcgen05
MMA or commit landing in it), tg.RaceError names the line that started it.

    c = kernel(a, b, interpret=True)            # via tg.kernel
    c = tg.interpret(kernel)(a, b)              # the same, as a function
    (c,) = run_graph(kernel.trace(a, b), [a, b])
"""
import functools
import sys
import types

from .runner import run_graph

__all__ = ["run_graph"]


class _CallablePackage(types.ModuleType):
    """This package, callable: `tg.interpret(kernel)` is `kernel` run by the interpreter."""

    def __call__(self, kernel, *, seed=None):
        return functools.partial(kernel, interpret=True, seed=seed)


sys.modules[__name__].__class__ = _CallablePackage
