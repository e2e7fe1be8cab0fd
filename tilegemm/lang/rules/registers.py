"""Register reallocation (setmaxnreg): counts ptxas accepts, moving in the direction they name, within the block.

A count is a multiple of 8 in [24, 256]. A block of 3 or more warpgroups
starts each thread with an equal share of the register file
(`arch.launch_registers`: 168 for 3 warpgroups); ptxas refuses (C7406) a
decrease to more than that, and an increase to less would shrink a
warpgroup's registers with the instruction meant to grow them. An increase
takes its registers from the block's pool, which only decreases fill, so the
warpgroups' counts after reallocation must add up to at most what the block
started with, or the last increase waits forever. Smaller blocks start with
whatever ptxas allocates, so only the count itself is checked there.
"""
from ...errors import KernelError
from ..arch import SETMAXNREG_MAX, SETMAXNREG_MIN, WARPGROUP_THREADS, launch_registers
from ..verify import graph_rule, rule
from .executors import ExecutorSpace, Unknown, with_enclosing


@rule("set_max_registers")
def register_reallocation(op, ctx):
    """set_max_registers: a legal count, no higher than the launch share to decrease, no lower to increase."""
    n, action = op.attrs["n"], op.attrs["action"]
    step = ctx.limits.register_granularity
    if n % step or not SETMAXNREG_MIN <= n <= SETMAXNREG_MAX:
        raise KernelError(f"set_max_registers({n}): setmaxnreg takes a multiple of {step} in "
                          f"[{SETMAXNREG_MIN}, {SETMAXNREG_MAX}] registers per thread", loc=op.loc)
    num_threads = ctx.graph.config["num_threads"]
    launch = launch_registers(num_threads, ctx.limits)
    if launch is None or (n <= launch if action == "decrease" else n >= launch):
        return
    share = (f"a block of {num_threads} warpgroups ({num_threads * WARPGROUP_THREADS} threads) starts each thread "
             f"with {launch} registers, its share of the {ctx.limits.registers_per_sm} in the register file")
    if action == "decrease":
        raise KernelError(f"set_max_registers({n}, action='decrease'): {share}, and ptxas refuses (C7406) to "
                          f"decrease to more than that; decrease to at most {launch}", loc=op.loc)
    raise KernelError(f"set_max_registers({n}, action='increase'): {share}, so this would shrink the warpgroup's "
                      f"registers; increase to at least {launch}, or use action='decrease'", loc=op.loc)


@graph_rule
def reallocations_fit_the_block(graph, ctx):
    """The warpgroups' register counts after set_max_registers add up to at most what the block launched with."""
    num_threads = graph.config["num_threads"]
    launch = launch_registers(num_threads, ctx.limits)
    if launch is None:
        return
    space = ExecutorSpace(graph)
    final = {}  # thread -> the set_max_registers it runs
    for op, enclosing in with_enclosing(graph.body.ops):
        if op.kind != "set_max_registers":
            continue
        try:
            threads = {run[space.thread_axis] for run in space.executors(enclosing)}
        except Unknown:
            return
        if threads & final.keys():
            return  # a thread reallocating twice ends with its last count: not followed statically
        final.update(dict.fromkeys(threads, op))
    counts = [final[t].attrs["n"] if t in final else launch for t in range(num_threads)]
    if sum(counts) <= launch * num_threads:
        return
    increase = next(op for op in final.values() if op.attrs["action"] == "increase")
    per_thread = " + ".join(f"{n}" for n in counts)
    raise KernelError(
        f"after set_max_registers the block's {num_threads} warpgroups hold {per_thread} = {sum(counts)} registers "
        f"per thread, more than the {launch * num_threads} ({num_threads} x {launch}) the block launched with: an "
        "increase takes registers only from what decreases released, so the last increase would wait forever. "
        f"Lower the increases or decrease more (e.g. {_fair_share(counts, final, launch, num_threads, ctx.limits)})",
        loc=increase.loc, related=[(f"set_max_registers({op.attrs['n']}, action={op.attrs['action']!r}) at", op.loc)
                                   for op in dict.fromkeys(final.values()) if op is not increase])


def _fair_share(counts, final, launch, num_threads, limits):
    """An increase that fits: the registers left by the other warpgroups, split over the increasing ones."""
    increasing = [t for t, op in final.items() if op.attrs["action"] == "increase"]
    left = launch * num_threads - sum(c for t, c in enumerate(counts) if t not in increasing)
    step = limits.register_granularity
    share = left // len(increasing) // step * step
    return f"increase to {share} per thread"
