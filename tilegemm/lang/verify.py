"""The verifier: rejects illegal kernels before anything is lowered.

`verify(graph)` walks the graph once with a scope-aware visitor and applies
every rule in RULES; the first violation raises tg.KernelError naming the
user's file:line, what is wrong and what would be legal. Rules are small
functions `rule(op, ctx)` so each can be read and tested on its own.
"""
from ..errors import KernelError
from .ir import Value


class VerifyContext:
    """What a rule may ask about the op being checked: enclosing ops, graph and arch limits."""

    def __init__(self, graph, limits):
        self.graph = graph
        self.limits = limits
        self.enclosing = []  # ops whose regions contain the current op, outermost first

    def inside(self, kind):
        return any(op.kind == kind for op in self.enclosing)

    def enclosing_op(self, kind):
        for op in reversed(self.enclosing):
            if op.kind == kind:
                return op
        return None


RULES = []  # per-op rules: fn(op, ctx)
GRAPH_RULES = []  # whole-graph rules: fn(graph, ctx)


def rule(fn):
    RULES.append(fn)
    return fn


def graph_rule(fn):
    GRAPH_RULES.append(fn)
    return fn


def verify(graph, limits=None):
    """Checks `graph` against every rule; raises KernelError on the first violation."""
    from .arch import DEFAULT_LIMITS
    ctx = VerifyContext(graph, limits or DEFAULT_LIMITS)
    _check_scopes(graph)
    _walk(graph.body.ops, ctx)
    for fn in GRAPH_RULES:
        fn(graph, ctx)
    return graph


def _walk(ops, ctx):
    for op in ops:
        for fn in RULES:
            fn(op, ctx)
        if op.regions:
            ctx.enclosing.append(op)
            for r in op.regions:
                _walk(r.ops, ctx)
            ctx.enclosing.pop()


def _check_scopes(graph):
    """Every operand must be defined earlier in an enclosing region of the same graph."""
    visible = set(id(v) for v in graph.params)

    def walk(region, visible):
        visible = set(visible) | {id(a) for a in region.args}
        for op in region.ops:
            for o in op.operands:
                if isinstance(o, Value) and id(o) not in visible:
                    where = f"defined at {o.loc}" if o.loc else "defined elsewhere"
                    raise KernelError(
                        f"{op.kind} uses a {o.type} that is out of scope here ({where}); refs from "
                        "tg.run_scoped and values from a loop or conditional body live only inside it",
                        loc=op.loc, related=[("the value was defined at", o.loc)] if o.loc else ())
            for r in op.regions:
                walk(r, visible)
            visible |= {id(r) for r in op.results}

    walk(graph.body, visible)


# Rules live in lang/rules/; importing the package registers them.
from . import rules  # noqa: E402,F401
