"""Streams (ordered queues of GPU work), events (points in a stream) and event-based kernel timing."""
import weakref

from cuda.bindings import driver as cu

from .device import current_device
from .driver import call


class Stream:
    """A CUDA stream. `Stream()` creates one on the current GPU; `Stream(handle)` views an existing one
    (0 = the legacy default stream, or a handle from torch/cupy) without owning it."""

    def __init__(self, handle=None):
        if handle is None:
            current_device()
            self.handle = call(cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_DEFAULT)
            weakref.finalize(self, call, cu.cuStreamDestroy, self.handle)
        else:
            self.handle = cu.CUstream(int(handle))

    @classmethod
    def default(cls):
        """The legacy default stream, which orders itself with every other blocking stream."""
        return cls(0)

    @property
    def dlpack_id(self):
        """The stream as the DLPack `stream=` argument names it (1 for the legacy default stream)."""
        return int(self.handle) or cu.CU_STREAM_LEGACY

    def wait(self, event):
        """Makes later work on this stream wait until `event` has completed (the host does not block)."""
        call(cu.cuStreamWaitEvent, self.handle, event.handle, 0)

    def synchronize(self):
        """Blocks the host until all work queued on this stream has finished."""
        call(cu.cuStreamSynchronize, self.handle)


class Event:
    """A marker recorded into a stream; two timing events measure the GPU time between them."""

    def __init__(self, timing=True):
        current_device()
        flags = cu.CUevent_flags.CU_EVENT_DEFAULT if timing else cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = call(cu.cuEventCreate, flags)
        weakref.finalize(self, call, cu.cuEventDestroy, self.handle)

    def record(self, stream=None):
        """Records the event after the work queued so far on `stream` (default stream if None); returns self."""
        call(cu.cuEventRecord, self.handle, (stream or Stream.default()).handle)
        return self

    def synchronize(self):
        """Blocks the host until the recorded work has finished."""
        call(cu.cuEventSynchronize, self.handle)

    def elapsed_ms(self, end):
        """Milliseconds of GPU time from this event to `end` (both recorded; waits for `end`)."""
        end.synchronize()
        return call(cu.cuEventElapsedTime, self.handle, end.handle)


def time_kernel(fn, warmup=3, iters=20, stream=None):
    """Mean GPU milliseconds per call of `fn()` over `iters` calls after `warmup` calls, timed with events."""
    stream = stream or Stream.default()
    for _ in range(warmup):
        fn()
    start = Event().record(stream)
    for _ in range(iters):
        fn()
    end = Event().record(stream)
    return start.elapsed_ms(end) / iters
