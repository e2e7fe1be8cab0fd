"""TMEM accesses from registers: whole 32-lane quarters, and TMEM loads waited for before their result is used.

A warpgroup reaches tensor memory through its four warps, warp w only lanes
[32 w, 32 w + 32) (its quarter), so a view it loads or stores starts at a
multiple of 32 lanes and spans whole quarters. `async_load_tmem`
(tcgen05.ld) fills its registers asynchronously: they hold the loaded values
only after `wait_load_tmem` (tcgen05.wait::ld), so every use of the result
must come after one, in the same thread's program order. A wait inside a
`when` or a loop body may not run, so it covers only uses inside it.
"""
import math

from ...errors import KernelError
from ..analysis import known_multiple, root_ref, view_chain
from ..arch import TMEM_LANES_PER_WARP
from ..ir import Value
from ..types import MemorySpace
from ..verify import graph_rule, rule

REGISTER_ACCESSES = ("async_load_tmem", "load", "store")  # ops reading or writing TMEM from registers
RUNS_ONCE = ("scope", "core_map")                          # regions that run exactly once where they stand


def lane_window(ref):
    """(start, g, lanes): the view of a TMEM ref starts at lane `start` (None if traced), a lane known to be a
    multiple of g (0: lane 0), and spans `lanes` lanes (1 where an integer index drops the lane dimension)."""
    start, multiple, lanes = 0, 0, root_ref(ref).shape[0]
    for view in reversed(view_chain(ref)):  # from the allocation outward
        offset = view.arg("starts")[0]
        start = start + offset if isinstance(start, int) and isinstance(offset, int) else None
        multiple = math.gcd(multiple, known_multiple(offset))
        lanes = view.attrs["sizes"][0]
        if lanes is None:
            return start, multiple, 1
    return start, multiple, lanes


@rule(*REGISTER_ACCESSES)
def tmem_accesses_whole_quarters(op, ctx):
    """A warpgroup loads or stores a TMEM view starting at a multiple of 32 lanes, spanning whole quarters."""
    (effect,) = op.opdef.effects   # the operand it reads or writes
    ref = op.arg(effect.operand)
    if ref.space != MemorySpace.TMEM:
        return
    start, multiple, lanes = lane_window(ref)
    quarter = TMEM_LANES_PER_WARP
    if multiple % quarter == 0 and lanes % quarter == 0:
        return
    where = f"lane {start}" if start is not None else f"a lane only known to be a multiple of {multiple}"
    raise KernelError(
        f"{op.kind} of {lanes} TMEM lane(s) starting at {where}: a warpgroup reaches TMEM through its four warps, "
        f"warp w only lanes [{quarter}w, {quarter}w + {quarter}), so a view it loads or stores must start at a "
        f"multiple of {quarter} lanes and span a multiple of {quarter} (e.g. acc.at[:, tg.ds(c, n)], all "
        "128 lanes)", loc=op.loc)


@graph_rule
def tmem_loads_waited_before_use(graph, ctx):
    """Every use of an async_load_tmem result follows a wait_load_tmem in program order (module docstring)."""
    _pending_after(graph.body.ops, {})


def _pending_after(ops, pending):
    """Walks `ops` with `pending` (id of an unwaited load result -> its load op); returns what is pending after."""
    pending = dict(pending)
    for op in ops:
        for operand in op.operands:
            load = pending.get(id(operand)) if isinstance(operand, Value) else None
            if load is not None:
                raise KernelError(
                    f"{op.kind} uses the registers of the async_load_tmem at {load.loc} before a "
                    "tg.wait_load_tmem(): tcgen05.ld fills them asynchronously, and they hold the loaded values "
                    "only after tcgen05.wait::ld. Call tg.wait_load_tmem() between the load and this use",
                    loc=op.loc, related=[("the load is at", load.loc)])
        if op.kind == "wait_load_tmem":
            pending = {}
        elif op.kind == "async_load_tmem":
            pending[id(op.result)] = op
        for region in op.regions:
            after = _pending_after(region.ops, pending)
            if op.kind in RUNS_ONCE:
                pending = after
    return pending
