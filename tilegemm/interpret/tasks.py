"""Tasks: one warpgroup ("thread") of one block, or one of its warps inside core_map, run as a coroutine.

A task executes graph ops with numpy; when an op must wait (a barrier phase, its
warps at the end of a core_map) it yields a wait object and the scheduler
resumes it once the wait is ready. Each task has a vector clock (clocks.py)
and the per-thread state of asynchronous operations: in-flight WGMMA groups,
TMA store groups, TMEM loads, and ordinary SMEM stores not yet fenced by
commit_smem.

A second clock, `tensor_vc`, holds what the task's own tcgen05 operations
(TMEM loads and stores, MMAs) are ordered after: it learns from barrier waits
only on barriers declared `orders_tensor_core=True`, the waits after which the
generated code puts tcgen05.fence::after_thread_sync.
"""
from collections import deque

from ..errors import KernelError
from ..lang.ir import Value
from ..lang.types import MemorySpace
from .clocks import join


class TaskId:
    """Who executes: (block, thread, warp). A clock key, kept across core_map forks of the same warp."""

    def __init__(self, label):
        self.label = label

    def __repr__(self):
        return self.label


class _Preempt:
    """The wait a seeded schedule inserts at synchronisation points: always ready, it only lets others run."""

    def ready(self):
        return True

    def finish(self):
        pass

    def describe(self):
        return "ready"


PREEMPT = _Preempt()


def run_ops(task, ops, env):
    """Executes `ops` in `task`; yields each wait that is not ready yet (or every sync point when seeded)."""
    seeded = task.machine.seeded
    for op in ops:
        handler = op.opdef.interpreter
        if handler.regions:
            yield from handler.fn(task, op, env)
            continue
        wait = handler.fn(task, op, env)
        if wait is not None:
            if seeded or not wait.ready():
                yield wait
            wait.finish()
        elif handler.sync and seeded:
            yield PREEMPT


class Task:
    """One coroutine of the interpreted launch; see the module docstring."""

    def __init__(self, machine, scheduler, block, thread, warp, clock, tensor_clock, env, ops, warp_axis=None):
        self.machine = machine
        self.scheduler = scheduler
        self.block = block
        self.thread = thread
        self.warp = warp
        self.warp_axis = warp_axis
        self.id = block.task_id(thread, warp)
        self.label = self.id.label
        self.vc = clock
        self.tensor_vc = tensor_clock
        clock[self.id] = clock.get(self.id, -1) + 1
        self.gen = run_ops(self, ops, env)
        self.pending = None
        self.done = False
        self.wgmma = deque()         # WgmmaGroups in flight, oldest first; the deque is also their engine
        self.store_groups = deque()  # committed bulk groups of TmaStores, oldest first
        self.open_stores = []        # TmaStores not yet committed to a group
        self.tmem_loads = []         # TmemLoads until wait_load_tmem
        self.unfenced = []           # ordinary SMEM store Accesses since the last commit_smem

    def operands(self, op, env):
        """The op's operands: values from `env`, Python literals as they are."""
        return [env[o.id] if isinstance(o, Value) else o for o in op.operands]

    def tensor_clock(self, ref):
        """The tensor clock for an access of `ref` by a tcgen05 operation if `ref` is TMEM, else None."""
        return self.tensor_vc if ref.buffer.space == MemorySpace.TMEM else None

    def stamp(self):
        """The stamp of this task's current epoch: events now are ordered before its next release."""
        return (self.id, self.vc[self.id])

    def release(self):
        """What an arrival by this task publishes: a copy of its clock; later events get a new epoch."""
        snapshot = dict(self.vc)
        self.vc[self.id] += 1
        return snapshot

    def axis(self, name, op):
        """This task's index along a named grid, cluster, thread or warp axis."""
        coords = self.block.coords
        if name in coords:
            return coords[name]
        if name == self.machine.thread_name:
            return self.thread
        if self.warp is not None and name == self.warp_axis:
            return self.warp
        raise KernelError(f"axis {name!r} has no index here", loc=op.loc)

    def unfinished(self):
        """The asynchronous operations this thread started and has not waited for: WGMMAs, TMA stores, TMEM loads."""
        return [*self.wgmma, *(store for group in self.store_groups for store in group), *self.open_stores,
                *self.tmem_loads]


class Fork:
    """A warpgroup at a core_map: spawns its 4 warp tasks and waits until all of them have left the region."""

    def __init__(self, parent, op, env):
        self.parent = parent
        self.op = op
        clock = parent.release()
        self.children = [Task(parent.machine, parent.scheduler, parent.block, parent.thread, w, dict(clock),
                              dict(parent.tensor_vc), dict(env), op.regions[0].ops, warp_axis=op.attrs["axis"])
                         for w in range(4)]
        for child in self.children:
            parent.scheduler.spawn(child)

    def ready(self):
        """True once every warp has finished the region."""
        return all(child.done for child in self.children)

    def finish(self):
        """The warpgroup continues knowing everything its warps did, and waits for their TMA stores."""
        for child in self.children:
            join(self.parent.vc, child.vc)
            join(self.parent.tensor_vc, child.tensor_vc)
            self.parent.store_groups.extend(child.store_groups)
            self.parent.open_stores.extend(child.open_stores)
            child.store_groups, child.open_stores = deque(), []
        self.parent.vc[self.parent.id] += 1

    def describe(self):
        """What the warpgroup waits for, for deadlock reports."""
        return f"core_map at {self.op.loc} waits for its 4 warps to finish"
