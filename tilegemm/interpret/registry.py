"""Interpreter handlers, registered against the op kinds of lang/registry.py: `@handler(kind)`."""
from dataclasses import dataclass

from ..lang.registry import opdef


@dataclass(frozen=True)
class Handler:
    """How a task executes one op kind: `fn(task, op, env)`; `regions`: fn is a generator that runs the op's
    nested regions; `sync`: the op is a synchronisation point, where a seeded schedule may switch tasks."""
    fn: object
    regions: bool
    sync: bool


def handler(kind, *, regions=False, sync=False):
    """Registers `fn` as the interpreter's handler of op kind `kind` (see Handler).

    A non-region handler returns None, or a wait object (ready(), finish(), describe()) that the task blocks on.
    """
    def register(fn):
        declared = opdef(kind)
        if declared.interpreter is not None:
            raise ValueError(f"the interpreter handler of {kind} is registered twice")
        declared.interpreter = Handler(fn, regions, sync)
        return fn
    return register
