"""Barrier arrive/wait, arrival counters, tcgen05 commits, WGMMA waits, register reallocation.

A ClusterBarrier exists in every block of its collective group; an arrival on
it arrives on every copy, so each copy completes after num_arrivals arrivals
from every block. Implicit-mode barrier_wait counts waits per (block, thread,
warp) and barrier, as the generated code keeps a phase bit per CUDA thread: the
k-th wait uses parity k & 1; a warpgroup-wide wait advances all four warps'
counts, and is an error when they disagree (some warps waited inside a
core_map and others did not).
"""
import numpy as np

from ...errors import KernelError
from ..asyncops import Tcgen05Commit
from ..barriers import BarrierWait
from ..clocks import join
from ..registry import handler
from .refs import same_barrier


def _group(task, axes):
    """The blocks of `task`'s group along cluster `axes` (just its own block if none), in rank order."""
    return task.block.cluster.peers(task.block, axes) if axes else [task.block]


@handler("barrier_arrive", sync=True)
def barrier_arrive(task, op, env):
    """One arrival of this warpgroup or warp (on every block's copy of a ClusterBarrier)."""
    (barrier,) = task.operands(op, env)
    element = barrier.element()
    clock = task.release()
    for block in _group(task, element.alloc_op.results[0].type.barrier.collective_axes):
        same_barrier(block, element).arrive(clock, op)


@handler("barrier_wait", sync=True)
def barrier_wait(task, op, env):
    """Waits for a phase: explicit parity, or the parity of this thread's next implicit phase."""
    barrier, *phase = task.operands(op, env)
    element = barrier.element()
    if op.arg("phase") is not None:
        return BarrierWait(task, element, int(phase[0]) & 1, op)
    warps = [task.warp] if task.warp is not None else range(4)
    counters = [(task.block.task_id(task.thread, w), element) for w in warps]
    counts = {task.machine.wait_counts.get(c, 0) for c in counters}
    if len(counts) > 1:
        per_warp = ", ".join(f"warp {w}: {task.machine.wait_counts.get(c, 0)}" for w, c in zip(warps, counters))
        raise KernelError(
            f"the warps of this warpgroup disagree on the phase of {element.describe()} ({per_warp} waits so "
            "far): implicit phases are tracked per CUDA thread, so a warpgroup-wide barrier_wait after waits "
            "inside a core_map needs every warp to have waited equally often; pass phase= explicitly instead",
            loc=op.loc)
    awaited = counts.pop()
    return BarrierWait(task, element, awaited & 1, op, counters, awaited)


@handler("tcgen05_commit_arrive", sync=True)
def tcgen05_commit_arrive(task, op, env):
    """Queues an arrival behind this thread's tcgen05 MMAs issued so far (on both blocks' barriers for a pair)."""
    (barrier,) = task.operands(op, env)
    blocks = _group(task, (op.attrs["collective_axis"],) if op.attrs["collective_axis"] else ())
    targets = [same_barrier(block, barrier.element()) for block in blocks]
    task.scheduler.issue(Tcgen05Commit(op, task.machine.engine(task.id), targets, task.release(), blocks))


@handler("wgmma_wait", sync=True)
def wgmma_wait(task, op, env):
    """Retires this warpgroup's oldest WGMMA groups until at most n are in flight."""
    while len(task.wgmma) > op.attrs["n"]:
        task.wgmma.popleft().retire(task.stamp())


@handler("set_max_registers")
def set_max_registers(task, op, env):
    """Register reallocation changes nothing the interpreter models."""


@handler("launch_dependents")
def launch_dependents(task, op, env):
    """The interpreter runs one launch at a time: there is no next kernel to place early."""


@handler("count_arrival", sync=True)
def count_arrival(task, op, env):
    """One atomic add on the GMEM counter: True for the `arrivals`-th, which sets it back to 0. What the GPU would
    get silently wrong is an error here: a counter outside its array, one that did not start the launch at 0 (and,
    at the launch's end, one not back at 0: Machine.check_counters)."""
    (counter,) = task.operands(op, env)
    arrivals = op.attrs["arrivals"]
    if not counter.inside():
        raise KernelError(f"count_arrival: the counter element lies outside its {counter.buffer.describe()} "
                          f"(shape {counter.buffer.data.shape})", loc=op.loc)
    count = int(counter.read())
    key = (id(counter.buffer), counter.index)
    if key not in task.machine.counters and count:
        raise KernelError(f"count_arrival: the counter held {count} when this launch first counted at it, not 0: "
                          "zero the counters once before the first launch (each launch leaves them at 0)",
                          loc=op.loc)
    task.machine.counters.setdefault(key, (counter, op))
    count += 1
    last = count == arrivals
    counter.write(np.int32(0 if last else count))
    # Release this warpgroup's accesses so far; the last arrival acquires every arrival's (its GMEM reads of what
    # the others wrote before arriving are then ordered, and a write after an arrival is a race it reads).
    arrived = task.machine.arrived.setdefault(key, {})
    join(arrived, task.release())
    if last:
        join(task.vc, arrived)
        del task.machine.arrived[key]
    env[op.results[0].id] = last
