"""What a kernel updates in place from launch to launch: `tg.count_arrival` counters (and the workspace beside
them), made once per array library, GPU, stream and spec, zeroed. Every launch leaves its counters at 0, so the next
launch on the same stream reuses them; launches on one stream run one after another, and another stream gets arrays
of its own."""
import numpy as np

from . import readers

_made = {}      # (library, GPU, stream handle, specs) -> the arrays
_streams = {}   # (Reader, GPU) -> a function reading the library's current stream


def counters_for(arrays, specs):
    """Zeroed arrays of `specs` (ShapeDtypes) for a launch on `arrays`: those of the library, GPU and current
    stream of the first GPU array the launch's fast path reads (made on first use); fresh numpy arrays where there
    is none (host arrays, jax and other DLPack producers), which the launch uploads."""
    for x in arrays:
        reader = readers.reader_for(x)
        ordinal = None if reader is None else reader.gpu(x)
        if ordinal is None:
            continue
        current = _streams.get((reader, ordinal))
        if current is None:
            current = _streams[(reader, ordinal)] = reader.stream(ordinal)
        stream = int(current())
        key = (reader.library, ordinal, stream, specs)
        made = _made.get(key)
        if made is None:
            made = _made[key] = tuple(reader.zeros(s.shape, s.dtype, ordinal, stream) for s in specs)
        return made
    return tuple(np.zeros(s.shape, s.dtype) for s in specs)
