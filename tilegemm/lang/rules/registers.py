"""Register reallocation (setmaxnreg): counts ptxas accepts, and moves in the direction they name.

A count is a multiple of 8 in [24, 256]. A block of 3 or more warpgroups
starts each thread with an equal share of the register file
(`arch.launch_registers`: 168 for 3 warpgroups); ptxas refuses (C7406) a
decrease to more than that, and an increase to less would shrink a
warpgroup's registers with the instruction meant to grow them. Smaller blocks
start with whatever ptxas allocates, so only the count itself is checked.
"""
from ...errors import KernelError
from ..arch import SETMAXNREG_MAX, SETMAXNREG_MIN, SETMAXNREG_STEP, WARPGROUP_THREADS, launch_registers
from ..verify import rule


@rule
def register_reallocation(op, ctx):
    """set_max_registers: a legal count, no higher than the launch share to decrease, no lower to increase."""
    if op.kind != "set_max_registers":
        return
    n, action = op.attrs["n"], op.attrs["action"]
    if n % SETMAXNREG_STEP or not SETMAXNREG_MIN <= n <= SETMAXNREG_MAX:
        raise KernelError(f"set_max_registers({n}): setmaxnreg takes a multiple of {SETMAXNREG_STEP} in "
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
