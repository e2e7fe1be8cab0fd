"""mbarriers: arrival counts, transaction bytes and phase parity, as the hardware keeps them.

A phase completes when it has received `expected` arrivals and every expected
transaction byte has landed (the byte count may dip below zero when data lands
before the arrival that expects it, as on the GPU). `try_wait.parity(p)`
succeeds once the phase in progress has a parity different from p, i.e. once
the last completed phase had parity p.

A phase's pending arrival count and transaction-byte count are limited to
MBARRIER_MAX_COUNT (2^20 - 1), the range of the hardware's counters.

Over-arrival rule: an arrival that finds the phase in progress already holding
all `expected` arrivals (so the phase is only waiting for bytes) is an error.
On the GPU the pending count would wrap and the phase would complete before
its data lands. Arrivals after a phase completed simply count towards the next
phase, as on the GPU; too many of those show up as a deadlock or a race.
"""
from ..errors import KernelError
from ..lang.arch import MBARRIER_MAX_COUNT
from .clocks import join


class BarrierElement:
    """One mbarrier of one block. It is also a clock key: the epoch of a phase is its completion count."""

    def __init__(self, alloc_op, index, owner, expected):
        self.alloc_op = alloc_op
        self.index = index
        self.owner = owner          # label of the block it lives in
        self.expected = expected    # arrivals per phase
        self.orders_tensor_core = alloc_op.results[0].type.barrier.orders_tensor_core
        self.completed = 0          # phases completed so far
        self.arrivals = []          # ops that arrived in the phase in progress
        self.tx = 0                 # transaction bytes still expected in the phase in progress
        self.phase_clock = {}       # what the arrivers of the phase in progress knew
        self.done_clock = {}        # what a waiter learns from the last completed phase
        self.completed_by = []      # ops that arrived in the last completed phase

    def arrive(self, clock, op, tx=0):
        """One arrival (with `tx` more expected bytes) carrying the arriver's `clock`."""
        if len(self.arrivals) >= self.expected:
            earlier = [("an arrival of this phase", a.loc) for a in self.arrivals]
            raise KernelError(
                f"over-arrival on {self.describe()}: it completes a phase after {self.expected} arrival(s), and "
                f"phase {self.completed} already has them and is waiting for {self.tx} transaction byte(s); "
                f"this {op.kind} is one arrival too many, which would complete the phase before its data lands. "
                f"Declare num_arrivals as the number of copies and arrivals of one phase",
                loc=op.loc, related=earlier + [("the barrier is declared at", self.alloc_op.loc)])
        self.arrivals.append(op)
        self._count_bytes(tx, op)
        join(self.phase_clock, clock)
        self._maybe_complete()

    def land(self, nbytes, clock, op):
        """`nbytes` of transaction data landed from the copy `op` whose issuer knew `clock`."""
        self._count_bytes(-nbytes, op)
        join(self.phase_clock, clock)
        self._maybe_complete()

    def _count_bytes(self, delta, op):
        """Adds `delta` to the phase's pending transaction bytes, within the hardware counter's range."""
        self.tx += delta
        if abs(self.tx) > MBARRIER_MAX_COUNT:
            state = "expected" if self.tx > 0 else "landed before the arrivals that expect them"
            raise KernelError(
                f"{op.kind} makes phase {self.completed} of {self.describe()} count {abs(self.tx)} transaction "
                f"bytes ({state}), but a phase counts at most {MBARRIER_MAX_COUNT} bytes (2^20 - 1, the range of "
                "the mbarrier's transaction counter). Spread the copies over more phases or barriers (e.g. more "
                "pipeline stages)", loc=op.loc)

    def _maybe_complete(self):
        """Completes the phase in progress once all arrivals and bytes are in."""
        if len(self.arrivals) == self.expected and self.tx == 0:
            self.completed += 1
            self.phase_clock[self] = self.completed
            self.done_clock = self.phase_clock
            self.phase_clock = {}
            self.completed_by = self.arrivals
            self.arrivals = []

    def passes(self, parity):
        """mbarrier.try_wait.parity: the phase in progress has a parity other than `parity`."""
        return (self.completed & 1) != parity

    def describe(self):
        """"barrier 'name'[i] of block (...) (declared at file:line)", for messages."""
        name = self.alloc_op.attrs.get("name")
        named = f" '{name}'" if name else ""
        return f"barrier{named}[{self.index}] of {self.owner} (declared at {self.alloc_op.loc})"

    def status(self):
        """Completed phases and the progress of the current one, for deadlock reports."""
        return (f"{self.completed} phase(s) completed; phase {self.completed} has {len(self.arrivals)} of "
                f"{self.expected} arrivals and waits for {self.tx} transaction byte(s)")


class BarrierWait:
    """A thread's barrier_wait: ready once the barrier has left the phase of the awaited parity.

    In implicit mode the wait knows the phase it means (`phase`), so it reports a barrier that has completed
    the next phase too: a parity cannot tell phase k from k + 2, so on the GPU the wait would hang, or
    return a phase late. Explicit-parity waits state only a parity and are modelled as the hardware runs them.
    """

    def __init__(self, task, element, parity, op, counters=(), phase=None):
        self.task = task
        self.element = element
        self.parity = parity
        self.op = op
        self.counters = tuple(counters)  # implicit mode: the per-warp phase counts this wait advances
        self.phase = phase               # implicit mode: the phase this wait waits for

    def ready(self):
        """Whether try_wait.parity would succeed now; raises if the barrier is two phases ahead of the wait."""
        if self.phase is not None and self.element.completed >= self.phase + 2:
            raise KernelError(
                f"{self.element.describe()} has completed phase {self.phase + 1} while this thread still waits for "
                f"phase {self.phase}: a wait only tests the phase's parity, so on the GPU it would miss phase "
                f"{self.phase} and hang (or return a phase late). The arrivals of a phase must not start before "
                f"every waiter has seen the previous one: make the arriving threads wait for a barrier this thread "
                f"arrives on after its wait (as a producer waits for its consumers' release of a stage)",
                loc=self.op.loc, related=[("an arrival of the later phase", op.loc)
                                          for op in self.element.completed_by[:2]])
        return self.element.passes(self.parity)

    def finish(self):
        """The waiter learns what the completed phase's arrivers knew (also for its tcgen05 operations if the
        barrier orders the tensor core); implicit mode counts the wait."""
        join(self.task.vc, self.element.done_clock)
        if self.element.orders_tensor_core:
            join(self.task.tensor_vc, self.element.done_clock)
        counts = self.task.machine.wait_counts
        for counter in self.counters:
            counts[counter] = counts.get(counter, 0) + 1

    def describe(self):
        """What the wait waits for and where the barrier stands, for deadlock reports."""
        if self.phase is None:
            awaited = f"the phase of parity {self.parity} (explicit parity)"
        else:
            awaited = f"phase {self.phase} (implicit phase tracking)"
        return (f"barrier_wait at {self.op.loc} waits for {awaited} of {self.element.describe()}: "
                f"{self.element.status()}")
