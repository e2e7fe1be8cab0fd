"""The scheduler: runs the tasks of one cluster as coroutines and decides when async operations complete.

Deterministic by default: tasks run in creation order, each until it blocks,
and TMA loads and tcgen05 operations complete only when every task is
blocked, oldest first (as late as the hardware could deliver them). With a
random generator, every step picks at random among the runnable tasks and the
operations that could complete, and tasks also yield at every
synchronisation point. If nothing can run or complete while tasks remain, the
launch is deadlocked.
"""
from ..errors import DeadlockError
from .block_end import check_block_ends
from .tasks import Fork


class Scheduler:
    """See the module docstring."""

    def __init__(self, rng=None):
        self.rng = rng
        self.tasks = []      # live tasks, in creation order
        self.everyone = []   # every task ever spawned, for the checks at the end
        self.in_flight = []  # TmaLoads and tcgen05 operations, oldest first

    def spawn(self, task):
        """Adds a task; it first runs in the next pass (or random pick)."""
        self.tasks.append(task)
        self.everyone.append(task)

    def issue(self, async_op):
        """Adds an asynchronous operation that completes when the scheduler decides."""
        self.in_flight.append(async_op)

    def run(self, where):
        """Runs every task to its end, lets what is still in flight complete, then checks that the blocks waited
        for all of it (block_end.py); `where` labels deadlock reports."""
        step = self._random_step if self.rng is not None else self._fair_pass
        while self.tasks:
            if not step():
                raise DeadlockError(self._deadlock_report(where))
        while self._complete_one():
            pass
        check_block_ends(self.everyone)

    def _fair_pass(self):
        """Runs every task until it blocks; if none could run, completes one operation. False: deadlock."""
        ran = False
        for task in list(self.tasks):
            ran |= self._advance(task, once=False)
        self.tasks = [t for t in self.tasks if not t.done]
        return ran or not self.tasks or self._complete_one()

    def _random_step(self):
        """Runs one task to its next yield, or completes one operation, picked at random. False: deadlock."""
        runnable = [t for t in self.tasks if t.pending is None or t.pending.ready()]
        ready_ops = [op for op in self.in_flight if op.deliverable()]
        choices = len(runnable) + len(ready_ops)
        if not choices:
            return False
        pick = int(self.rng.integers(choices))
        if pick < len(runnable):
            task = runnable[pick]
            self._advance(task, once=True)
            if task.done:
                self.tasks.remove(task)
        else:
            self._complete(ready_ops[pick - len(runnable)])
        return True

    def _advance(self, task, once):
        """Resumes `task` until it blocks (or, if `once`, until its next yield); False if it could not run."""
        if task.pending is not None and not task.pending.ready():
            return False
        while True:
            try:
                wait = task.gen.send(None)
            except StopIteration:
                task.done, task.pending = True, None
                return True
            task.pending = wait
            if once or not wait.ready():
                return True

    def _complete_one(self):
        """Completes the oldest in-flight operation that may complete now; False if there is none."""
        for op in self.in_flight:
            if op.deliverable():
                self._complete(op)
                return True
        return False

    def _complete(self, op):
        """Completes `op` now and forgets it."""
        self.in_flight.remove(op)
        op.complete()

    def _deadlock_report(self, where):
        """Every blocked task (warps first, then warpgroups waiting at a core_map) and what it waits for."""
        lines = [f"deadlock: every task of the cluster at {where} is blocked and no asynchronous operation "
                 f"can complete"]
        for task in self.tasks:
            if not isinstance(task.pending, Fork):
                lines.append(f"  {task.label}: {task.pending.describe()}")
        for task in self.tasks:
            if isinstance(task.pending, Fork):
                lines.append(f"  {task.label}: {task.pending.describe()}")
        finished = [t.label for t in self.everyone if t.done and t.warp is None]
        if finished:
            lines.append("  finished: " + "; ".join(finished))
        return "\n".join(lines)
