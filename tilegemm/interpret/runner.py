"""`run_graph`: interprets a traced kernel over its whole grid, one cluster at a time.

Clusters cannot synchronise with each other, so running each to completion
before the next is one legal interleaving (and much faster than mixing them);
the blocks of one cluster run concurrently.
"""
import itertools

import numpy as np

from ..errors import KernelError
from ..lang.types import MemorySpace
from . import ops  # noqa: F401  (registers the op handlers)
from .grid import Cluster, Machine
from .memory import Buffer, RefView, uninitialised
from .scheduler import Scheduler
from .tasks import Task


def run_graph(graph, arrays, seed=None, aliases=None):
    """Runs `graph` on numpy `arrays` (its inputs) and returns its outputs as numpy arrays.

    `aliases` ({input index: output index}) makes an output the same memory as an
    input (a private copy of the caller's array): it starts with the input's contents.

    `seed` (an int) shuffles the interleaving of tasks and the completion of
    asynchronous operations; None is the deterministic schedule. Raises
    tg.DeadlockError, tg.RaceError or tg.KernelError (e.g. over-arrival on a
    barrier) naming the user's source lines.
    """
    inputs = _inputs(graph, arrays)
    by_output = {j: i for i, j in (aliases or {}).items()}
    outputs = [inputs[by_output[j]] if j in by_output else uninitialised(p.type.shape, p.type.dtype)
               for j, p in enumerate(graph.outputs)]
    buffers = {}   # one Buffer per array: an aliased input and output are the same memory
    counted = any(op.kind == "count_arrival" for op in graph.walk())   # blocks order GMEM accesses: check them
    params = {p.id: RefView.whole(buffers.setdefault(id(data), Buffer(data, MemorySpace.GMEM, tracked=counted)))
              for p, data in zip(graph.params, inputs + outputs)}
    machine = Machine(graph, seeded=seed is not None)
    rng = np.random.default_rng(seed) if seed is not None else None
    config = graph.config
    with np.errstate(all="ignore"):  # like the GPU: overflow gives inf, NaN propagates, nothing traps
        for grid_index in itertools.product(*(range(n) for n in config["grid"])):
            cluster = Cluster(graph, grid_index)
            scheduler = Scheduler(rng)
            for block in cluster.blocks:
                for thread in range(config["num_threads"]):
                    scheduler.spawn(Task(machine, scheduler, block, thread, None, {}, {}, dict(params),
                                         graph.body.ops))
            scheduler.run(cluster.label)
    machine.check_counters()
    return outputs


def _inputs(graph, arrays):
    """Private copies of the input arrays in the traced dtypes, after checking count and shapes."""
    if len(arrays) != len(graph.inputs):
        raise KernelError(f"kernel {graph.name} takes {len(graph.inputs)} input array(s), got {len(arrays)}",
                          loc=graph.loc)
    copies = []
    for i, (param, array) in enumerate(zip(graph.inputs, arrays)):
        t = param.type
        array = np.asarray(array)
        if tuple(array.shape) != tuple(t.shape):
            raise KernelError(f"input {i} of kernel {graph.name} has shape {array.shape}, traced for {t.shape}",
                              loc=graph.loc)
        copies.append(np.array(array, dtype=t.dtype))  # a private copy: kernels may write their inputs
    return copies
