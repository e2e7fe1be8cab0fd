"""Asynchronous operations in flight: TMA loads and stores, WGMMA groups, TMEM loads, tcgen05 MMAs and commits.

Each records its memory accesses as in flight when it is issued (races.py) and
does its data movement or math when it completes. TMA loads and tcgen05
operations complete whenever the scheduler chooses (tcgen05 ones in issue
order per thread); WGMMA groups and TMA stores complete when their issuing
thread waits for them (`wgmma_wait`, `wait_smem_to_gmem`), the latest moment
the hardware allows, so that data read early is visibly stale.

Each also says, in `unfinished(block)`, why it must not still be pending when
a block ends (block_end.py reports it at the line that started it).
"""
from collections import deque

import numpy as np

from ..lang.tensorcore import instruction_of
from .clocks import with_event


def product(a, b):
    """a @ b of MMA operands (already rounded to their f16, bf16 or fp8 dtype: the values the tensor core reads),
    accumulated in f32."""
    return np.matmul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False))


def accumulated(op, acc, a, b):
    """acc + a @ b as the tensor-core instructions of MMA `op` compute it (lang/tensorcore.py): each sums the
    products of its K in f32 and adds them to the accumulator, which an accumulator narrower than f32 (f16)
    rounds to after every instruction."""
    if acc.dtype == np.float32:
        return acc + product(a, b)
    step = instruction_of(op).k(a.dtype)
    for k in range(0, a.shape[1], step):
        acc = (acc.astype(np.float32) + product(a[:, k:k + step], b[k:k + step])).astype(acc.dtype)
    return acc


class TmaLoad:
    """One TMA transfer GMEM -> SMEM: lands in one block's SMEM and completes its bytes on a barrier."""

    def __init__(self, op, src, dst, barrier, block, access, clock):
        self.op = op
        self.src = src
        self.dst = dst
        self.barrier = barrier
        self.block = block  # the Block whose SMEM `dst` is
        self.access = access
        self.clock = clock  # what the issuing thread knew when it issued the copy

    def deliverable(self):
        """A TMA load may land at any time."""
        return True

    def complete(self):
        """Lands the data, stamps the write with the barrier phase it completes in, and completes its bytes.

        The destination block must observe that phase before it ends."""
        self.dst.write(self.src.read().reshape(self.dst.shape))   # the source may have extra size-1 dimensions
        self.access.stamp = (self.barrier, self.barrier.completed + 1)
        self.block.expect(self.barrier, self.barrier.completed + 1, self)
        self.barrier.land(self.dst.nbytes, self.clock, self.op)

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the copy_gmem_to_smem ({self.access.who}) writing {self.dst.buffer.describe()} "
                f"completes a phase of {self.barrier.describe()}, but no thread of {block.label} waits for that "
                f"phase before the block ends, so the block could exit while TMA still writes its shared memory. "
                f"Wait for the barrier (tg.barrier_wait) before the end of the kernel, or do not issue the copy")


class TmaStore:
    """One TMA transfer SMEM -> GMEM, part of a bulk group of its issuing thread."""

    def __init__(self, op, src, dst, access):
        self.op = op
        self.src = src
        self.dst = dst
        self.access = access

    def complete(self, stamp):
        """Copies SMEM to GMEM (clipped at the array's edge); the SMEM read is retired at `stamp`."""
        self.dst.write(self.src.read().reshape(self.dst.shape))   # the destination may have extra size-1 dimensions
        self.access.stamp = stamp

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the copy_smem_to_gmem ({self.access.who}) still reads "
                f"{self.src.buffer.describe()} when its thread ends: no tg.wait_smem_to_gmem covers its bulk group, "
                "so the block could exit, and its shared memory be reused, while TMA still reads it. Call "
                "tg.wait_smem_to_gmem(0) (wait_read_only=True is enough) before the end of the kernel")


class TmemLoad:
    """One async_load_tmem: its TMEM read stays in flight until the issuing thread's wait_load_tmem."""

    def __init__(self, src, access):
        self.op = access.op
        self.src = src
        self.access = access

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the async_load_tmem ({self.access.who}) still reads {self.src.buffer.describe()} "
                "when its thread ends: no tg.wait_load_tmem() follows it. Call tg.wait_load_tmem() after the load")


class WgmmaGroup:
    """One wgmma: acc += a @ b (acc = a @ b without `accumulate`), applied when `wgmma_wait` retires it."""

    def __init__(self, op, who, acc, a, b, accesses):
        self.op = op
        self.who = who
        self.acc = acc
        self.a = a
        self.b = b
        self.accesses = accesses

    def retire(self, stamp):
        """Applies acc += a @ b; operand reads and the acc write are retired at `stamp`."""
        start = self.acc.read()
        if not self.op.attrs["accumulate"]:
            start = np.zeros_like(start)
        self.acc.write(accumulated(self.op, start, self.a.read(), self.b.read()))
        for access in self.accesses:
            access.stamp = stamp

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the wgmma ({self.who}) is still in flight when its warpgroup ends: no "
                "tg.wgmma_wait retires it, so the tensor core could still read its operands and write the "
                "accumulator after the warpgroup exits. Call tg.wgmma_wait(0) before the end of the kernel")


class TensorCoreEngine:
    """The in-order tcgen05 queue of one issuing thread; as a clock key its epoch counts completed operations."""

    def __init__(self, label):
        self.label = label
        self.queue = deque()
        self.issued = 0

    def enqueue(self, operation):
        """Appends an MMA or commit; returns its position in the queue (1, 2, ...), its epoch once complete."""
        self.queue.append(operation)
        self.issued += 1
        return self.issued

    def __repr__(self):
        return f"<tcgen05 queue of {self.label}>"


class TensorCoreOp:
    """What tcgen05 MMAs and commits share: a place in their thread's queue, in-order completion, and arrivals
    (carrying the queue position as a clock event) on barriers of the `blocks` that must observe them."""

    def __init__(self, op, engine, arrivals, clock, blocks):
        self.op = op
        self.engine = engine
        self.arrivals = arrivals  # barrier elements its completion arrives on
        self.clock = clock        # what the issuing thread knew when it issued the operation
        self.seq = engine.enqueue(self)
        for block in blocks:      # the blocks whose TMEM or barriers it writes must observe its completion
            block.expect(engine, self.seq, self)

    def deliverable(self):
        """tcgen05 operations of one thread complete in issue order."""
        return self.engine.queue[0] is self

    def retire(self):
        """Leaves the queue and arrives on the barriers, publishing this and every earlier queue operation."""
        self.engine.queue.popleft()
        clock = with_event(self.clock, self.engine, self.seq)
        for element in self.arrivals:
            element.arrive(clock, self.op)


class Tcgen05Mma(TensorCoreOp):
    """One (possibly 2-CTA) tcgen05 MMA: per block acc (+)= a @ [b of every block, side by side]."""

    def __init__(self, op, engine, parts, b_views, accumulate, arrivals, clock, accesses, blocks):
        self.parts = parts  # [(acc view, a view)] one per block of the MMA
        self.b_views = b_views
        self.accumulate = accumulate
        self.accesses = accesses
        super().__init__(op, engine, arrivals, clock, blocks)

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
        self.retire()

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the tcgen05_mma ({self.engine.label}) writes TMEM of {block.label}, but no thread "
                "of that block waits for its completion before the block ends, so the block could exit while the "
                "tensor core still writes its tensor memory. Give the MMA a barrier (or follow it with "
                "tg.tcgen05_commit_arrive) and wait for that barrier before the end of the kernel")


class Tcgen05Commit(TensorCoreOp):
    """tcgen05_commit_arrive: arrives on barriers once every earlier operation of the same queue completed."""

    def complete(self):
        """Arrives on the barriers, publishing every earlier MMA of the queue."""
        self.retire()

    def unfinished(self, block):
        """Why this operation must not be pending when `block` ends, at the line that started it."""
        return (f"{self.op.loc}: the tcgen05_commit_arrive ({self.engine.label}) arrives on a barrier of "
                f"{block.label}, but no thread of that block waits for that arrival before the block ends, so "
                "it could land after the block exited. Wait for the barrier before the end of the kernel")
