"""Control ops: when, fori_loop, while_loop, cond and scope run nested regions in the same task; core_map forks 4
warp tasks."""
from ...errors import KernelError
from ..tasks import Fork, run_ops
from ..registry import handler


@handler("when", regions=True)
def when(task, op, env):
    """Runs the region if the condition holds."""
    (cond,) = task.operands(op, env)
    if cond:
        yield from run_ops(task, op.regions[0].ops, env)


@handler("scope", regions=True)
def scope(task, op, env):
    """Runs a run_scoped region (its allocations are per block, see refs.py)."""
    yield from run_ops(task, op.regions[0].ops, env)


@handler("fori_loop", regions=True)
def fori_loop(task, op, env):
    """Runs the body for i in [lo, hi) with the loop-carried values; results are the final carry."""
    lo, hi, *carry = task.operands(op, env)
    region = op.regions[0]
    index_arg, *carry_args = region.args
    body, end = region.ops[:-1], region.ops[-1]
    for i in range(lo, hi):
        env[index_arg.id] = i
        for arg, value in zip(carry_args, carry):
            env[arg.id] = value
        yield from run_ops(task, body, env)
        carry = task.operands(end, env)
    for result, value in zip(op.results, carry):
        env[result.id] = value


@handler("yield")
def stray_yield(task, op, env):
    """A yield only ends a region of fori_loop, while_loop or cond, which consumes it."""
    raise KernelError("a yield op outside the end of a fori_loop, while_loop or cond region", loc=op.loc)


@handler("core_map", sync=True)
def core_map(task, op, env):
    """Forks the warpgroup into its 4 warp tasks and waits for them (see tasks.Fork)."""
    if task.warp is not None:
        raise KernelError("core_map cannot be nested", loc=op.loc)
    return Fork(task, op, env)


def _run_region(task, region, args, env):
    """Runs a region that ends with a yield, its arguments bound to `args`; returns the yielded values."""
    for arg, value in zip(region.args, args):
        env[arg.id] = value
    yield from run_ops(task, region.ops[:-1], env)
    return task.operands(region.ops[-1], env)


@handler("while_loop", regions=True)
def while_loop(task, op, env):
    """Runs the body while the cond region yields True; results are the final carry."""
    carry = task.operands(op, env)
    cond_region, body_region = op.regions
    while (yield from _run_region(task, cond_region, carry, env))[0]:
        carry = yield from _run_region(task, body_region, carry, env)
    for result, value in zip(op.results, carry):
        env[result.id] = value


@handler("cond", regions=True)
def cond(task, op, env):
    """Runs the true or the false region; results are what it yields."""
    pred, *operands = task.operands(op, env)
    values = yield from _run_region(task, op.regions[0 if pred else 1], operands, env)
    for result, value in zip(op.results, values):
        env[result.id] = value
