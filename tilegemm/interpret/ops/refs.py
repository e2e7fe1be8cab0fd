"""Allocation, views (windows and transposes), loads and stores.

SMEM, TMEM and barriers exist once per block: the first thread to execute an
`alloc` creates them and every later execution (other threads, later loop
iterations) reuses them, like a static shared-memory layout. An ACC belongs to
the warpgroup that allocates it and starts at zero each time.
"""
import numpy as np

from ...lang.types import MemorySpace
from ..barriers import BarrierElement
from ..memory import Buffer, RefView, uninitialised
from ..races import touch_operand
from ..registry import handler


def allocation(block, op):
    """`block`'s buffer for the SMEM, TMEM or barrier `alloc` op `op`, created on first use."""
    buffer = block.scratch.get(op)
    if buffer is None:
        t = op.results[0].type
        if t.space == MemorySpace.BARRIER:
            spec = t.barrier
            peers = block.cluster.peers(block, spec.collective_axes) if spec.collective_axes else [block]
            elements = np.empty(t.shape, dtype=object)
            for i in range(t.shape[0]):
                elements[i] = BarrierElement(op, i, block.label, spec.num_arrivals * len(peers))
            buffer = Buffer(elements, t.space, op, block.label)
        else:
            buffer = Buffer(uninitialised(t.shape, t.dtype), t.space, op, block.label)
        block.scratch[op] = buffer
    return buffer


def same_barrier(block, element):
    """The barrier element at the same place as `element` in `block` (another block of the cluster)."""
    return allocation(block, element.alloc_op).data[element.index]


@handler("alloc")
def alloc(task, op, env):
    """A ref to the whole allocation: a fresh zero ACC of this warpgroup, or the block's buffer."""
    t = op.results[0].type
    if t.space == MemorySpace.ACC:
        buffer = Buffer(np.zeros(t.shape, t.dtype), t.space, op, task.label)
    else:
        buffer = allocation(task.block, op)
    env[op.results[0].id] = RefView.whole(buffer)


@handler("view")
def view(task, op, env):
    """A window of a ref; no data moves."""
    ref, *starts = task.operands(op, env)
    env[op.results[0].id] = ref.view(tuple(int(s) for s in starts), op.attrs["sizes"], op.loc)


@handler("transpose_ref")
def transpose_ref(task, op, env):
    """The same window with permuted dimensions (numpy.transpose); race checks see the same buffer."""
    (ref,) = task.operands(op, env)
    env[op.results[0].id] = ref.transposed(op.attrs["permutation"])


@handler("load")
def load(task, op, env):
    """Reads a window into a register array (checked against in-flight writers)."""
    (ref,) = task.operands(op, env)
    touch_operand(task, op, "ref", ref)
    env[op.results[0].id] = ref.read()


@handler("load_scalar")
def load_scalar(task, op, env):
    """Reads one int32 element into a scalar when the op runs (0 past a GMEM array's edge)."""
    (ref,) = task.operands(op, env)
    touch_operand(task, op, "ref", ref)
    env[op.results[0].id] = int(ref.read())


@handler("store")
@handler("stmatrix")
def store(task, op, env):
    """Writes a register array into a window (checked against in-flight readers and writers); stmatrix is the
    same store, by another instruction."""
    ref, value = task.operands(op, env)
    access = touch_operand(task, op, "ref", ref)
    if access.generic:
        task.unfenced.append(access)
    ref.write(value)
