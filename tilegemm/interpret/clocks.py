"""Vector clocks: the happens-before order between tasks that the race checks consult.

A clock maps keys (task ids, barrier elements, tensor-core engines) to epochs.
An access remembered with the stamp (key, epoch) happened before everything
whose clock has `clock[key] >= epoch`.
"""


def join(into, other):
    """Makes `into` know everything `other` knows (pointwise maximum)."""
    for key, epoch in other.items():
        if into.get(key, -1) < epoch:
            into[key] = epoch


def sees(clock, stamp):
    """True if the event stamped `stamp` = (key, epoch) happened before the holder of `clock`."""
    return clock.get(stamp[0], -1) >= stamp[1]


def with_event(clock, key, epoch):
    """A copy of `clock` that also knows the event (key, epoch)."""
    out = dict(clock)
    if out.get(key, -1) < epoch:
        out[key] = epoch
    return out
