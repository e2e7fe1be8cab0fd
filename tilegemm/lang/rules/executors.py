"""Who runs an op: the (cluster coordinates, thread, warp) executors its enclosing `tg.when`s let through.

Shared by the rules that count per executor (barrier arrivals, register
reallocation). A condition over the cluster, thread and warp indices selects
executors; a condition over other values only (loop indices, grid
coordinates) decides whether the op runs at all, for every executor alike; a
condition mixing the two cannot be followed statically and raises Unknown,
so that the rule leaves the op to the interpreter.
"""
import itertools

from ..arch import WARPS_PER_WARPGROUP
from ..ir import Value


_EVALUATED = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "min": min, "max": max, "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def evaluate(x, axes, memo=None):
    """The value of scalar `x` when the named axes take the values in `axes` ({name: index}), or None if it
    depends on anything else (loop indices, other axes) or on an op this does not follow (div, rem)."""
    if isinstance(x, (bool, int)):
        return x
    if not isinstance(x, Value) or x.producer is None:
        return None
    memo = {} if memo is None else memo
    if id(x) not in memo:
        memo[id(x)] = _evaluate_op(x.producer, axes, memo)
    return memo[id(x)]


def _evaluate_op(op, axes, memo):
    """`evaluate` of the result of `op`."""
    if op.kind == "axis_index":
        return axes.get(op.attrs["axis"])
    if op.kind == "select":
        cond = evaluate(op.arg("cond"), axes, memo)
        return None if cond is None else evaluate(op.arg("on_true" if cond else "on_false"), axes, memo)
    if op.kind != "binop" or op.attrs["op"] not in _EVALUATED:
        return None
    a, b = (evaluate(o, axes, memo) for o in op.operands)
    kind = op.attrs["op"]
    if kind == "and" and (a is False or b is False):
        return False
    if kind == "or" and (a is True or b is True):
        return True
    return None if a is None or b is None else _EVALUATED[kind](a, b)


def mentions_axes(x, names, seen=None):
    """Whether scalar `x` is computed from `tg.axis_index` of any of the axes `names`."""
    if not isinstance(x, Value) or x.producer is None:
        return False
    seen = set() if seen is None else seen
    if id(x) in seen:
        return False
    seen.add(id(x))
    op = x.producer
    if op.kind == "axis_index":
        return op.attrs["axis"] in names
    return any(mentions_axes(o, names, seen) for o in op.operands)


class Unknown(Exception):
    """Who runs an op depends on values only known at run time."""


def with_enclosing(ops, enclosing=()):
    """(op, the ops enclosing it, outermost first) for every op of `ops` and of their regions, in program order."""
    for op in ops:
        yield op, list(enclosing)
        for region in op.regions:
            yield from with_enclosing(region.ops, (*enclosing, op))


class ExecutorSpace:
    """The executors of one cluster of a kernel, and who of them runs an op."""

    def __init__(self, graph):
        config = graph.config
        self.cluster = dict(zip(config["cluster_names"], config["cluster"]))
        self.thread_axis = config["thread_name"] or "(thread)"  # unnamed: no condition can tell threads apart
        self.num_threads = config["num_threads"]

    def executors(self, enclosing):
        """The executors {axis: index} (cluster axes, thread, warp) that run an op inside `enclosing`."""
        axes = dict(self.cluster)
        axes[self.thread_axis] = self.num_threads
        warp_axis = next((op.attrs["axis"] for op in enclosing if op.kind == "core_map"), None)
        if warp_axis is not None:
            axes[warp_axis] = WARPS_PER_WARPGROUP
        runs = [dict(zip(axes, values)) for values in itertools.product(*(range(n) for n in axes.values()))]
        for op in enclosing:
            if op.kind != "when" or not mentions_axes(op.arg("cond"), axes):
                continue
            results = [evaluate(op.arg("cond"), run) for run in runs]
            if None in results:
                raise Unknown()
            runs = [run for run, result in zip(runs, results) if result]
        return runs

    def block(self, run):
        """The cluster coordinates of an executor, as a tuple."""
        return tuple(run[axis] for axis in self.cluster)

    def role(self, run):
        """The executor's thread and warp, which every block of the cluster runs alike."""
        return tuple((axis, value) for axis, value in run.items() if axis not in self.cluster)

    def group_of(self, run, axes):
        """The blocks along cluster `axes` of the executor's block (its own block when `axes` is empty)."""
        ranges = [range(self.cluster[a]) if a in axes else [run[a]] for a in self.cluster]
        return list(itertools.product(*ranges))

    def coords(self, block):
        """'(x=1)' for messages."""
        return "(" + ", ".join(f"{a}={v}" for a, v in zip(self.cluster, block)) + ")"
