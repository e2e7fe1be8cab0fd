"""Arrival counters (`tg.count_arrival`) for kernels called on device arrays: int32 zeros made once per array
library, GPU, stream and shape. Every launch leaves its counters at 0, so the next launch on the same stream
reuses them; launches on one stream run one after another, and another stream gets arrays of its own."""
import numpy as np

from . import readers

_made = {}      # (library, GPU, stream handle, shape) -> the counters
_streams = {}   # (Reader, GPU) -> a function reading the library's current stream


def counters_for(arrays, shape):
    """Zeroed int32 counters of `shape` for a launch on `arrays`: those of the library, GPU and current stream of
    the first GPU array the launch's fast path reads (made on first use); a fresh numpy array where there is none
    (host arrays, jax and other DLPack producers), which the launch uploads."""
    for x in arrays:
        reader = readers.reader_for(x)
        ordinal = None if reader is None else reader.gpu(x)
        if ordinal is None:
            continue
        current = _streams.get((reader, ordinal))
        if current is None:
            current = _streams[(reader, ordinal)] = reader.stream(ordinal)
        stream = int(current())
        key = (reader.library, ordinal, stream, tuple(shape))
        counters = _made.get(key)
        if counters is None:
            counters = _made[key] = reader.zeros(shape, np.int32, ordinal, stream)
        return counters
    return np.zeros(shape, np.int32)
