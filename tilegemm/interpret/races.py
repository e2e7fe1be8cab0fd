"""Race checks: each SMEM, TMEM or ACC access (and GMEM's, in kernels using tg.count_arrival) is ordered against the
earlier accesses it conflicts with.

Two accesses to overlapping windows conflict unless both read. The earlier one
is remembered as an `Access`: in flight (no stamp yet) while an asynchronous
operation may still touch the memory, then stamped with the event that retires
it (a barrier phase, a `wgmma_wait`, a `wait_smem_to_gmem`, ...). A later
access is legal only if it happens after that event (see clocks.py).
Operations of one in-order engine (the wgmma queue of a warpgroup, the tcgen05
queue of a thread) never conflict with each other. Async-proxy readers (TMA
stores, MMAs) additionally need ordinary stores to be fenced by `commit_smem`,
and a tcgen05 operation of one thread touching TMEM a tcgen05 MMA of another
wrote must be ordered after that MMA by the thread's tensor clock (tasks.py):
through a barrier that orders the tensor core.
"""
from ..errors import RaceError
from ..lang.registry import ASYNC, ENGINES, GENERIC
from ..lang.types import MemorySpace
from .asyncops import TensorCoreEngine
from .clocks import sees

_DEFAULT_HINT = ("Accesses from different threads must be ordered by a barrier: barrier_arrive after the first, "
                 "barrier_wait before the second.")
_GMEM_HINT = ("Blocks order their GMEM accesses only through tg.count_arrival: write before arriving, and read what "
              "other blocks wrote only where count_arrival returned True (the last arrival).")


class Access:
    """A remembered access: window, read or write, the op and thread behind it, and its retiring event."""
    __slots__ = ("box", "write", "op", "who", "engine", "stamp", "generic", "fence")

    def __init__(self, box, write, op, who, engine, stamp, generic):
        self.box = box
        self.write = write
        self.op = op
        self.who = who
        self.engine = engine    # in-order engine of an async operation, or None
        self.stamp = stamp      # (key, epoch) of the retiring event; None while in flight
        self.generic = generic  # an ordinary store: async readers need a commit_smem after it
        self.fence = None       # stamp of the commit_smem that fenced it


def touch_operand(task, op, operand, ref, engine=None):
    """Race-checks and remembers `task`'s access of `ref`, the operand `operand` of `op`, as the op's kind
    declares it (lang/opdefs.py): a read or a write; done at once, or in flight until its engine completes it
    (`engine`: the run-time in-order queue it joins, if any); through the async proxy (whose reads of shared
    memory need ordinary stores fenced by commit_smem) or the generic one (whose shared-memory stores do)."""
    effect = op.opdef.effect(operand)
    smem = ref.buffer.space == MemorySpace.SMEM
    return touch(ref.buffer, ref.box, write=effect.writes, op=op, who=task.label, clock=task.vc,
                 stamp=task.stamp() if effect.synchronous else None, engine=engine,
                 async_read=smem and effect.proxy == ASYNC and not effect.writes,
                 generic=smem and effect.proxy == GENERIC and effect.writes, tensor_clock=task.tensor_clock(ref))


def touch(buffer, box, *, write, op, who, clock, stamp=None, engine=None, async_read=False, generic=False,
          tensor_clock=None):
    """Checks an access of `box` in `buffer` against the remembered ones and remembers it.

    `clock` is the accessing thread's clock; `stamp` None means the access stays
    in flight until the caller stamps the returned Access. Raises RaceError
    naming both source lines if an earlier conflicting access is not ordered
    before this one. `tensor_clock`, for tcgen05 operations, is the thread's
    tensor clock, which must also order earlier tcgen05 MMAs of other threads.
    """
    access = Access(box, write, op, who, engine, stamp, generic)
    if not buffer.tracked:
        return access
    kept = []
    conflict = None  # the unordered earlier access to report; one by another op explains more
    for old in buffer.accesses:
        if not _overlap(old.box, box):
            kept.append(old)
            continue
        same_engine = engine is not None and old.engine is engine
        if ((old.write or write) and not same_engine and (old.stamp is None or not sees(clock, old.stamp))
                and (conflict is None or conflict.op is op and old.op is not op)):
            conflict = old
        if (tensor_clock is not None and (old.write or write) and isinstance(old.engine, TensorCoreEngine)
                and not same_engine and old.stamp is not None and sees(clock, old.stamp)
                and not sees(tensor_clock, old.stamp)):
            raise RaceError(
                f"{op.loc}: {op.kind} ({who}) touches {buffer.describe()} {_window(box)}, which the tcgen05_mma at "
                f"{old.op.loc} ({old.who}) wrote, but this thread knows that MMA complete only through a barrier "
                "declared without orders_tensor_core=True: a tcgen05 operation is ordered after a barrier wait only "
                "by tcgen05.fence::after_thread_sync, which tilegemm emits after waits on barriers declared with "
                "orders_tensor_core=True. Declare the barrier this thread waits on with tg.Barrier(..., "
                "orders_tensor_core=True)")
        if async_read and old.generic and (old.fence is None or not sees(clock, old.fence)):
            raise RaceError(
                f"{op.loc}: {op.kind} ({who}) reads {buffer.describe()} {_window(box)} through the async proxy "
                f"(TMA or tensor core), but the store at {old.op.loc} ({old.who}) that wrote it was not followed "
                f"by tg.commit_smem() before this read was issued. Call tg.commit_smem() after the stores.")
        if not (_covers(box, old.box) and _superseded(old, write, same_engine, clock)):
            kept.append(old)
    if conflict is not None:
        raise _race(buffer, access, conflict)
    kept.append(access)
    buffer.accesses = kept
    return access


def fence(accesses, stamp):
    """Marks ordinary stores as fenced for the async proxy by a commit_smem stamped `stamp`."""
    for access in accesses:
        if access.fence is None:
            access.fence = stamp


def _superseded(old, write, same_engine, clock):
    """Whether a new access covering `old` makes remembering `old` useless for later checks."""
    if same_engine:
        return write
    if old.stamp is None or not sees(clock, old.stamp):
        return False
    return write or not old.write


def _overlap(a, b):
    """Whether two boxes (per-dimension [lo, hi) ranges) intersect."""
    for (a0, a1), (b0, b1) in zip(a, b):
        if a0 >= b1 or b0 >= a1:
            return False
    return True


def _covers(outer, inner):
    """Whether box `outer` contains box `inner`."""
    for (o0, o1), (i0, i1) in zip(outer, inner):
        if i0 < o0 or i1 > o1:
            return False
    return True


def _window(box):
    """'[lo:hi, ...]' for messages."""
    return "[" + ", ".join(f"{lo}:{hi}" for lo, hi in box) + "]"


def _race(buffer, new, old):
    """The RaceError for access `new` that `old` is not ordered before, naming both source lines."""
    why = "may still be in flight" if old.stamp is None else "and nothing orders the two"
    verb = "writes" if new.write else "reads"
    old_verb = "writes" if old.write else "reads"
    engine = next((e.engine for e in old.op.opdef.effects if e.engine is not None), None)
    hint = ENGINES[engine].completes if engine is not None else \
        _GMEM_HINT if buffer.space == MemorySpace.GMEM else _DEFAULT_HINT
    return RaceError(
        f"{new.op.loc}: {new.op.kind} ({new.who}) {verb} {buffer.describe()} {_window(new.box)}, "
        f"but the {old.op.kind} at {old.op.loc} ({old.who}), which {old_verb} it, {why}. {hint}")
