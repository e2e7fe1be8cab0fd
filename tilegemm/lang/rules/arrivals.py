"""Barrier accounting: the arrivals each phase receives match the barrier's count, and the bytes a barrier
expects from a collective copy are all issued.

Arrival sites: a `copy_gmem_to_smem` (one arrival with its bytes; a
partitioned copy arrives once, in the leader, for both halves), a
`barrier_arrive` (one per warpgroup, per warp inside a core_map, on every
block's copy of a ClusterBarrier), a `tcgen05_mma` with a barrier and a
`tcgen05_commit_arrive` (one each, in both blocks of a 2-CTA pair). Sites on
the same barrier element that follow each other in one region, with no
barrier_wait between them, form a group, taken to make one phase's arrivals
each time it runs. Who runs a site comes from its enclosing `tg.when`
conditions over the cluster, thread and warp indices; conditions on other
values (loop indices, grid coordinates) only decide whether the group runs.
A barrier with a site whose executors depend on both is left to the
interpreter. Then, for every block that receives arrivals:

- a barrier all of whose arrivals come from one group must receive exactly
  its count a phase (num_arrivals; times the blocks along its axes for a
  ClusterBarrier): fewer and its waiters hang, more and it over-arrives;
- no group may make more arrivals than the count.

A multicast or partitioned copy completes bytes on barriers of every block of
its group, so every block of the group must issue it.
"""
import itertools
import math

from ...errors import KernelError
from ..analysis import evaluate, mentions_axes, root_ref, view_chain
from ..arch import WARPS_PER_WARPGROUP
from ..verify import graph_rule

ARRIVING = {"copy_gmem_to_smem": 2, "barrier_arrive": 0, "tcgen05_mma": 4, "tcgen05_commit_arrive": 0}


class Unknown(Exception):
    """Who runs an arrival site depends on values only known at run time."""


@graph_rule
def barrier_arrivals_match_counts(graph, ctx):
    """See the module docstring."""
    space = ExecutorSpace(graph)
    groups = {}  # barrier alloc op -> [[site, ...], ...]
    _collect(graph.body.ops, [], groups)
    for alloc, barrier_groups in groups.items():
        try:
            counted = [(group, space.arrivals(group)) for group in barrier_groups]
        except Unknown:
            continue
        for group, per_block in counted:
            _check_group(alloc, group, per_block, len(barrier_groups) == 1, space)
    for op, enclosing in _collective_copies(graph.body.ops, []):
        space.check_collective_copy(op, enclosing)


class Site:
    """An op arriving on a barrier, with the ops enclosing it (outermost first)."""

    def __init__(self, op, enclosing):
        self.op = op
        self.enclosing = enclosing
        self.barrier = op.operands[ARRIVING[op.kind]]


def _collect(ops, enclosing, groups):
    """Adds the arrival groups of the region `ops` (and of nested regions) to `groups`."""
    open_groups = {}  # element key -> the group being extended in this region
    for op in ops:
        if any(inner.kind == "barrier_wait" for inner in op.walk()):  # a wait ends the groups before it
            open_groups = {}
        if op.kind in ARRIVING and (op.kind != "tcgen05_mma" or op.attrs["has_barrier"]):
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
    """A key for the barrier element a ref names: its allocation and its index (a literal or a traced value)."""
    chain = view_chain(barrier)
    if not chain:
        return (id(barrier), 0)
    if len(chain) > 1:
        return None
    index = chain[0].operands[1]
    return (id(root_ref(barrier)), index if isinstance(index, int) else id(index))


def _collective_copies(ops, enclosing):
    """(op, enclosing ops) of every multicast or partitioned copy."""
    for op in ops:
        if op.kind == "copy_gmem_to_smem" and op.attrs["collective_axes"]:
            yield op, enclosing
        for region in op.regions:
            yield from _collective_copies(region.ops, enclosing + [op])


class ExecutorSpace:
    """Who may run an op: every (cluster coordinates, thread, warp) of a block's cluster, filtered by `when`s."""

    def __init__(self, graph):
        config = graph.config
        self.cluster = dict(zip(config["cluster_names"], config["cluster"]))
        self.thread_axis = config["thread_name"] or "(thread)"  # unnamed: no condition can tell threads apart
        self.num_threads = config["num_threads"]

    def executors(self, enclosing):
        """The assignments {axis: index} (cluster axes, thread, warp) that run an op inside `enclosing`."""
        axes = dict(self.cluster)
        axes[self.thread_axis] = self.num_threads
        warp_axis = next((op.attrs["axis"] for op in enclosing if op.kind == "core_map"), None)
        if warp_axis is not None:
            axes[warp_axis] = WARPS_PER_WARPGROUP
        runs = [dict(zip(axes, values)) for values in itertools.product(*(range(n) for n in axes.values()))]
        for op in enclosing:
            if op.kind != "when" or not mentions_axes(op.operands[0], axes):
                continue  # conditions on other values decide whether the group runs, not who runs it
            results = [evaluate(op.operands[0], run) for run in runs]
            if None in results:
                raise Unknown()
            runs = [run for run, result in zip(runs, results) if result]
        return runs

    def block(self, run):
        """The cluster coordinates of an executor, as a tuple."""
        return tuple(run[axis] for axis in self.cluster)

    def group_of(self, run, axes):
        """The blocks along cluster `axes` of the executor's block (its own block when `axes` is empty)."""
        ranges = [range(self.cluster[a]) if a in axes else [run[a]] for a in self.cluster]
        return list(itertools.product(*ranges))

    def arrivals(self, group):
        """{block: arrivals} that one run of the site `group` makes on its barrier element, per block."""
        if group is None:
            raise Unknown()
        per_block = {}
        for site in group:
            for run in self.executors(site.enclosing):
                for block in self.targets(site.op, run):
                    per_block[block] = per_block.get(block, 0) + 1
        return per_block

    def targets(self, op, run):
        """The blocks whose barrier element receives the arrival of `op` run by `run`."""
        if op.kind == "copy_gmem_to_smem":
            if op.attrs["partitioned_axis"] is not None:  # the leader's barrier tracks both halves
                return [self.block(run)] if all(run[a] == 0 for a in op.attrs["collective_axes"]) else []
            return [self.block(run)]
        if op.kind == "barrier_arrive":
            return self.group_of(run, op.operands[0].type.barrier.collective_axes)
        axis = op.attrs["collective_axis"]
        return self.group_of(run, (axis,) if axis else ())

    def expected(self, barrier):
        """Arrivals that complete a phase of one block's copy of `barrier`."""
        spec = barrier.type.barrier
        return spec.num_arrivals * math.prod(self.cluster[a] for a in spec.collective_axes)

    def check_collective_copy(self, op, enclosing):
        """Every block of a multicast or partitioned copy's group issues it (the barriers expect every part)."""
        try:
            runs = self.executors(enclosing)
        except Unknown:
            return
        axes = op.attrs["collective_axes"]
        issued = {(self.block(run), self._others(run)) for run in runs}
        for run in runs:
            for block in self.group_of(run, axes):
                if (block, self._others(run)) not in issued:
                    what = "partitioned" if op.attrs["partitioned_axis"] is not None else "multicast"
                    expects = ("the leader's barrier expects the bytes of both halves" if what == "partitioned" else
                               "every block's barrier expects the whole tile, a chunk from each block")
                    raise KernelError(
                        f"this {what} copy along {axes} is issued by block {self.coords(self.block(run))} but never "
                        f"by block {self.coords(block)} of its group, and {expects}: the missing part never lands "
                        "and the barrier waits forever. Issue the copy in every block of the group (no tg.when on "
                        f"{', '.join(axes)} around it)", loc=op.loc)

    def _others(self, run):
        """The executor's thread and warp, which the blocks of a group run alike."""
        return tuple((axis, value) for axis, value in run.items() if axis not in self.cluster)

    def coords(self, block):
        """'(x=1)' for messages."""
        return "(" + ", ".join(f"{a}={v}" for a, v in zip(self.cluster, block)) + ")"


def _check_group(alloc, group, per_block, only_group, space):
    """Raises if one run of `group` gives some block more arrivals than a phase takes (or, as the barrier's
    only group, a different number)."""
    expected = space.expected(alloc.result)
    wrong = [(block, count) for block, count in per_block.items()
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
