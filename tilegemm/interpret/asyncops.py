"""Asynchronous operations in flight: TMA loads and stores, WGMMA groups, tcgen05 MMAs and commits.

Each records its memory accesses as in flight when it is issued (races.py) and
does its data movement or math when it completes. TMA loads and tcgen05
operations complete whenever the scheduler chooses (tcgen05 ones in issue
order per thread); WGMMA groups and TMA stores complete when their issuing
thread waits for them (`wgmma_wait`, `wait_smem_to_gmem`), the latest moment
the hardware allows, so that data read early is visibly stale.
"""
from collections import deque

import numpy as np

from .clocks import with_event


def product(a, b):
    """a @ b of MMA operands (already rounded to their f16/bf16 dtype), accumulated in f32."""
    return np.matmul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False))


class TmaLoad:
    """One TMA transfer GMEM -> SMEM: lands in one block's SMEM and completes its bytes on a barrier."""

    def __init__(self, op, src, dst, barrier, access, clock):
        self.op = op
        self.src = src
        self.dst = dst
        self.barrier = barrier
        self.access = access
        self.clock = clock  # what the issuing thread knew when it issued the copy

    def deliverable(self):
        """A TMA load may land at any time."""
        return True

    def complete(self):
        """Lands the data, stamps the write with the barrier phase it completes in, and completes its bytes."""
        self.dst.write(self.src.read())
        self.access.stamp = (self.barrier, self.barrier.completed + 1)
        self.barrier.land(self.dst.nbytes, self.clock)


class TmaStore:
    """One TMA transfer SMEM -> GMEM, part of a bulk group of its issuing thread."""

    def __init__(self, src, dst, access):
        self.src = src
        self.dst = dst
        self.access = access

    def complete(self, stamp):
        """Copies SMEM to GMEM (clipped at the array's edge); the SMEM read is retired at `stamp`."""
        self.dst.write(self.src.read())
        self.access.stamp = stamp


class WgmmaGroup:
    """One wgmma: acc += a @ b, applied when `wgmma_wait` retires it."""

    def __init__(self, acc, a, b, accesses):
        self.acc = acc
        self.a = a  # a register array (captured at issue) or an SMEM view
        self.b = b
        self.accesses = accesses

    def retire(self, stamp):
        """Applies acc += a @ b; operand reads and the acc write are retired at `stamp`."""
        a = self.a if isinstance(self.a, np.ndarray) else self.a.read()
        self.acc.write(self.acc.read() + product(a, self.b.read()))
        for access in self.accesses:
            access.stamp = stamp


class TensorCoreEngine:
    """The in-order tcgen05 queue of one issuing thread; as a clock key its epoch counts completed MMAs."""

    def __init__(self, label):
        self.label = label
        self.queue = deque()
        self.issued = 0
        self.done = 0

    def __repr__(self):
        return f"<tcgen05 queue of {self.label}>"


class Tcgen05Mma:
    """One (possibly 2-CTA) tcgen05 MMA: per block acc (+)= a @ [b of every block, side by side]."""

    def __init__(self, op, engine, parts, b_views, accumulate, arrivals, clock, accesses):
        self.op = op
        self.engine = engine
        engine.issued += 1
        self.seq = engine.issued
        self.parts = parts  # [(acc view, a view)] one per block of the MMA
        self.b_views = b_views
        self.accumulate = accumulate
        self.arrivals = arrivals  # barrier elements its completion arrives on
        self.clock = clock
        self.accesses = accesses
        engine.queue.append(self)

    def deliverable(self):
        """tcgen05 operations of one thread complete in issue order."""
        return self.engine.queue[0] is self

    def complete(self):
        """Computes the MMA, stamps its accesses with its queue position and arrives on its barriers."""
        b = np.concatenate([v.read() for v in self.b_views], axis=1)
        for acc, a in self.parts:
            result = product(a.read(), b)
            if self.accumulate:
                result = result + acc.read()
            acc.write(result)
        for access in self.accesses:
            access.stamp = (self.engine, self.seq)
        self.engine.done = self.seq
        self.engine.queue.popleft()
        clock = with_event(self.clock, self.engine, self.seq)
        for element in self.arrivals:
            element.arrive(clock, self.op)


class Tcgen05Commit:
    """tcgen05_commit_arrive: arrives on barriers once every earlier MMA of the same queue completed."""

    def __init__(self, op, engine, arrivals, clock):
        self.op = op
        self.engine = engine
        self.arrivals = arrivals
        self.clock = clock
        engine.queue.append(self)

    def deliverable(self):
        """Only after every earlier operation of its queue."""
        return self.engine.queue[0] is self

    def complete(self):
        """Arrives on the barriers, publishing every earlier MMA of the queue."""
        self.engine.queue.popleft()
        clock = with_event(self.clock, self.engine, self.engine.done)
        for element in self.arrivals:
            element.arrive(clock, self.op)
