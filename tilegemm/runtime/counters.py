"""What a kernel updates in place from launch to launch: `tg.count_arrival` counters and the workspace beside them,
made once per array library, GPU, stream and specs, zeroed. Every launch leaves its counters at 0, so the next
launch on the same stream reuses them; launches on one stream run one after another, and another stream gets arrays
of its own.

CUDA graphs: a graph capture records a memset of the counters before its first launch that uses them, so every
replay starts from zeros, whatever other graphs captured on the same stream, or launches outside graphs, left there
(a replay is ordered with them as the stream's launches are: on the capture stream, one after another). Graphs
captured on one stream share its arrays: replayed concurrently on different streams, or beside launches on the
capture stream, they would count at the same counters, so replay them one after another. The arrays
are made outside any capture where a launch needs them first (a capture then only zeroes them); first needed inside
one, they come from the capturing library's memory (torch: the graph's pool)."""
import atexit
import math

import numpy as np

from . import readers
from .memory import fill_bytes
from .stream import Stream

_made = {}      # (library, GPU, stream handle, workspace specs, counter specs) -> the arrays
_zeroed = set()  # (capture id, key of _made): the captures that have recorded a memset of those counters
_streams = {}   # (Reader, GPU) -> a function reading the library's current stream
atexit.register(_made.clear)   # freed while the interpreter is whole (a torch view's DLPack deleter runs Python)


def counters_for(arrays, workspace, counters):
    """The arrays of `workspace` then of `counters` (ShapeDtypes), zeroed, for a launch on `arrays`: those of the
    library, GPU and current stream of the first GPU array the launch's fast path reads (made on first use; in a CUDA
    graph capture, the counters zeroed by the graph first); fresh numpy arrays where there is none (host arrays, jax
    and other DLPack producers), which the launch uploads."""
    specs = (*workspace, *counters)
    for x in arrays:
        reader = readers.reader_for(x)
        ordinal = None if reader is None else reader.gpu(x)
        if ordinal is None:
            continue
        current = _streams.get((reader, ordinal))
        if current is None:
            current = _streams[(reader, ordinal)] = reader.stream(ordinal)
        stream = int(current())
        key = (reader.library, ordinal, stream, tuple(workspace), tuple(counters))
        made = _made.get(key)
        if made is None:
            made = _made[key] = tuple(reader.zeros(s.shape, s.dtype, ordinal, stream) for s in specs)
        capture = reader.capture(stream)
        if capture is not None and (capture, key) not in _zeroed:
            _zeroed.add((capture, key))
            for array, spec in zip(made[len(workspace):], counters):
                fill_bytes(reader.pointer(array), math.prod(spec.shape) * spec.dtype.itemsize, 0, Stream(stream))
        return made
    return tuple(np.zeros(s.shape, s.dtype) for s in specs)
