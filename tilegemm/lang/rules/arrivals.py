"""Barrier accounting: the arrivals each phase receives match the barrier's count, and the bytes a barrier
expects from a collective copy are all issued.

Arrival sites: a `copy_gmem_to_smem` (one arrival with its bytes; a
partitioned copy arrives once, in the leader, for both halves), a
`barrier_arrive` (one per warpgroup, per warp inside a core_map, on every
block's copy of a ClusterBarrier), a `tcgen05_mma` with a barrier and a
`tcgen05_commit_arrive` (one each, in both blocks of a 2-CTA pair). Sites on
the same barrier element that follow each other in one region, with no
barrier_wait between them, form a group, taken to make one phase's arrivals
each time it runs. Who runs a site comes from its enclosing `tg.when`s
(executors.py), and an element index computed from the executor's axes
(`turn.at[1 - wg]`) is counted per element it names; a barrier with a site
whose executors cannot be followed statically is left to the interpreter.
Then, for every block that receives arrivals:

- a barrier all of whose arrivals come from one group must receive exactly
  its count a phase (num_arrivals; times the blocks along its axes for a
  ClusterBarrier): fewer and its waiters hang, more and it over-arrives;
- no group may make more arrivals than the count.

A multicast or partitioned copy completes bytes on barriers of every block of
its group, so every block of the group must issue it.
"""
import math

from ...errors import KernelError
from ..analysis import root_ref, view_chain
from ..verify import graph_rule
from .executors import ExecutorSpace, Unknown, evaluate, with_enclosing

@graph_rule
def barrier_arrivals_match_counts(graph, ctx):
    """See the module docstring."""
    space = ExecutorSpace(graph)
    groups = {}  # barrier alloc op -> [[site, ...], ...]
    _collect(graph.body.ops, [], groups)
    for alloc, barrier_groups in groups.items():
        try:
            counted = [(group, _arrivals(space, group)) for group in barrier_groups]
        except Unknown:
            continue
        for group, per_target in counted:
            _check_group(alloc, group, per_target, len(barrier_groups) == 1, space)
    for op, enclosing in with_enclosing(graph.body.ops):
        if op.kind == "copy_gmem_to_smem" and op.attrs["collective_axes"]:
            _check_collective_copy(space, op, enclosing)


class Site:
    """An op arriving on a barrier (as its kind's ARRIVE effect declares), with the ops enclosing it (outermost
    first)."""

    def __init__(self, op, enclosing):
        self.op = op
        self.enclosing = enclosing
        self.barrier = op.opdef.arrival(op)


def _collect(ops, enclosing, groups):
    """Adds the arrival groups of the region `ops` (and of nested regions) to `groups`."""
    open_groups = {}  # element key -> the group being extended in this region
    for op in ops:
        if any(inner.kind == "barrier_wait" for inner in op.walk()):  # a wait ends the groups before it
            open_groups = {}
        if op.opdef.arrival(op) is not None:
            site = Site(op, enclosing)
            key = _element(site.barrier)
            alloc = root_ref(site.barrier).producer
            if key is None:
                groups.setdefault(alloc, []).append(None)  # an index the accounting cannot follow
            elif key in open_groups:
                open_groups[key].append(site)
            else:
                open_groups[key] = [site]
                groups.setdefault(alloc, []).append(open_groups[key])
        for region in op.regions:
            _collect(region.ops, enclosing + [op], groups)


def _element(barrier):
    """A key for the barrier element a ref names: its allocation and its index (a literal, the sum of the literal
    starts of views taken one through another, or one traced value); None for traced starts of chained views."""
    starts = [view.arg("starts")[0] for view in view_chain(barrier)]
    if all(isinstance(start, int) for start in starts):
        return (id(root_ref(barrier)), sum(starts))
    if len(starts) > 1:
        return None
    return (id(root_ref(barrier)), id(starts[0]))


def _arrivals(space, group):
    """{(block, element): arrivals} that one run of the site `group` makes on its barrier element, per block; the
    element is the index each executor computes where it is a function of the executor's axes (consumer `wg`
    arriving on `turn.at[1 - wg]` reaches the other consumer's barrier), else None (one element for all)."""
    if group is None:
        raise Unknown()
    per_target = {}
    for site in group:
        for run in space.executors(site.enclosing):
            element = _executor_index(site.barrier, run)
            for block in _targets(space, site.op, run):
                per_target[block, element] = per_target.get((block, element), 0) + 1
    return per_target


def _executor_index(barrier, run):
    """The barrier element `run` arrives on, where its index is a traced function of the executor's axes."""
    chain = view_chain(barrier)
    if not chain:
        return None
    (index,) = chain[0].arg("starts")
    return None if isinstance(index, int) else evaluate(index, run)


def _targets(space, op, run):
    """The blocks whose barrier element receives the arrival of `op` run by `run`."""
    if op.kind == "copy_gmem_to_smem":
        if op.attrs["partitioned_axis"] is not None:  # the leader's barrier tracks both halves
            return [space.block(run)] if all(run[a] == 0 for a in op.attrs["collective_axes"]) else []
        return [space.block(run)]
    if op.kind == "barrier_arrive":
        return space.group_of(run, op.arg("barrier").type.barrier.collective_axes)
    axis = op.attrs["collective_axis"]
    return space.group_of(run, (axis,) if axis else ())


def _expected(space, barrier):
    """Arrivals that complete a phase of one block's copy of `barrier`."""
    spec = barrier.type.barrier
    return spec.num_arrivals * math.prod(space.cluster[a] for a in spec.collective_axes)


def _check_collective_copy(space, op, enclosing):
    """Every block of a multicast or partitioned copy's group issues it (the barriers expect every part)."""
    try:
        runs = space.executors(enclosing)
    except Unknown:
        return
    axes = op.attrs["collective_axes"]
    issued = {(space.block(run), space.role(run)) for run in runs}
    for run in runs:
        for block in space.group_of(run, axes):
            if (block, space.role(run)) in issued:
                continue
            what = "partitioned" if op.attrs["partitioned_axis"] is not None else "multicast"
            expects = ("the leader's barrier expects the bytes of both halves" if what == "partitioned" else
                       "every block's barrier expects the whole tile, a chunk from each block")
            raise KernelError(
                f"this {what} copy along {axes} is issued by block {space.coords(space.block(run))} but never by "
                f"block {space.coords(block)} of its group, and {expects}: the missing part never lands and the "
                f"barrier waits forever. Issue the copy in every block of the group (no tg.when on "
                f"{', '.join(axes)} around it)", loc=op.loc)


def _check_group(alloc, group, per_target, only_group, space):
    """Raises if one run of `group` gives some block's element more arrivals than a phase takes (or, as the
    barrier's only group, a different number)."""
    expected = _expected(space, alloc.result)
    wrong = [(block, count) for (block, _), count in per_target.items()
             if count > expected or (only_group and count < expected)]
    if not wrong:
        return
    block, count = wrong[0]
    first = group[0].op
    name = alloc.attrs.get("name")
    barrier = f"barrier '{name}'" if name else "this barrier"
    where = f" of block {space.coords(block)}" if space.cluster else ""
    sites = first.kind + (" here and the other arrival sites of its group" if len(group) > 1 else " here")
    spec = alloc.result.type.barrier
    blocks = expected // spec.num_arrivals
    fix = (f"declare num_arrivals={count // blocks}" if count % blocks == 0 else
           "make every block of its group arrive alike")
    if count > expected:
        effect = ("the surplus over-arrives: it counts towards the next phase, which would complete before its "
                  "own arrivals and data")
    else:
        effect = "no other code arrives on it, so its waiters would wait forever"
    raise KernelError(
        f"{barrier}{where} completes a phase after {expected} arrival(s), but one run of the {sites} makes "
        f"{count} (counted over the threads, warps and blocks that run them); {effect}. {fix[0].upper()}{fix[1:]} "
        "or change who arrives", loc=first.loc,
        related=[("the barrier is declared at", alloc.loc)] + [("an arrival site of the group", s.op.loc)
                                                               for s in group[1:]])
