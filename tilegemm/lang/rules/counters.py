"""Arrival counters (`tg.count_arrival`): a count that must start every launch at 0.

The last arrival sets its counter back to 0, so a counter left at 0 by one launch
starts the next at 0, but only if its memory outlives the launch: a kernel output
is fresh (or poisoned) memory at every launch, a plain input is the caller's and
not the kernel's to write. The counter is an input updated in place.
"""
from ...errors import KernelError
from ..analysis import root_ref
from ..verify import rule
from .tma import param_name


@rule("count_arrival")
def counters_persist_between_launches(op, ctx):
    """A counter is an element of a kernel input aliased to an output (input_output_aliases)."""
    graph = ctx.graph
    root = root_ref(op.arg("counter"))
    inputs = [i for i, p in enumerate(graph.inputs) if p is root]
    outputs = [j for j, p in enumerate(graph.outputs) if p is root]
    if any(i in graph.aliases for i in inputs) or any(j in graph.aliases.values() for j in outputs):
        return
    raise KernelError(f"count_arrival's counter is in {param_name(graph, root)}, which does not keep its count "
                      "between launches: pass the counters as an input updated in place (input_output_aliases="
                      "{input index: output index}), zeroed once by the caller; each launch leaves them at 0",
                      loc=op.loc)
