"""What a kernel updates in place from launch to launch: `tg.count_arrival` counters (and the workspace beside
them), made once per array library, GPU, stream and spec, zeroed. Every launch leaves its counters at 0, so the next
launch on the same stream reuses them; launches on one stream run one after another, and another stream gets arrays
of its own.

CUDA graphs: arrays first made while their stream is being captured are zeroed by a memset recorded in that graph,
which runs only when the graph is replayed. Another graph captured on the same stream reuses them, and would count
from whatever they hold if it were replayed before the first graph ever was: a launch on the stream before the
captures (a warm-up call on the capture stream) zeroes them for all. `counters_for` warns where it makes them in a
capture."""
import warnings

import numpy as np

from . import readers

CAPTURED = ("tilegemm: the counters of a split-K kernel summed by its last slices are first made while their stream is "
            "captured into a CUDA graph, so only that graph's replay zeroes them; another graph captured on this "
            "stream would count from whatever they hold if replayed first. Call the same operation once on the "
            "capture stream before capturing (torch.cuda.graph(..., stream=s): a warm-up on s) to zero them for "
            "every graph.")
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
            if reader.capturing():
                warnings.warn(CAPTURED, stacklevel=2)
            made = _made[key] = tuple(reader.zeros(s.shape, s.dtype, ordinal, stream) for s in specs)
        return made
    return tuple(np.zeros(s.shape, s.dtype) for s in specs)
