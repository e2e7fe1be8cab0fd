"""What a kernel updates in place from launch to launch: `tg.count_arrival` counters (and the workspace beside
them), made once per array library, GPU, stream and spec, zeroed. Every launch leaves its counters at 0, so the next
launch on the same stream reuses them; launches on one stream run one after another, and another stream gets arrays
of its own.

CUDA graphs: a launch captured into a graph gets arrays of that capture's own, made (and zeroed, by a memset the
graph records before their first use) on the capture's first launch that needs them. So every replay starts from
zeros, whatever other graphs captured on the same stream, or uncaptured launches, did before; and a graph is never
replayed against arrays another graph or an uncaptured launch is using. They live as long as the process, as the
arrays of streams do."""
import numpy as np

from . import readers

_made = {}      # (library, GPU, stream handle, capture id or None, specs) -> the arrays
_streams = {}   # (Reader, GPU) -> a function reading the library's current stream


def counters_for(arrays, specs):
    """Zeroed arrays of `specs` (ShapeDtypes) for a launch on `arrays`: those of the library, GPU, current stream
    and graph capture (if the stream is being captured) of the first GPU array the launch's fast path reads (made on
    first use); fresh numpy arrays where there is none (host arrays, jax and other DLPack producers), which the launch
    uploads."""
    for x in arrays:
        reader = readers.reader_for(x)
        ordinal = None if reader is None else reader.gpu(x)
        if ordinal is None:
            continue
        current = _streams.get((reader, ordinal))
        if current is None:
            current = _streams[(reader, ordinal)] = reader.stream(ordinal)
        stream = int(current())
        key = (reader.library, ordinal, stream, reader.capture(stream), specs)
        made = _made.get(key)
        if made is None:
            made = _made[key] = tuple(reader.zeros(s.shape, s.dtype, ordinal, stream) for s in specs)
        return made
    return tuple(np.zeros(s.shape, s.dtype) for s in specs)
