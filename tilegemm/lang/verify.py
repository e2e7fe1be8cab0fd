"""The verifier: rejects, at the user's line, every kernel its target architecture cannot run.

`verify(graph, arch)` checks, in order:

1. scopes: every operand is defined earlier in an enclosing region;
2. support: every op is one the target lowers (lang/registry.py: a lowering rule, or the
   reason the architecture declares for refusing it);
3. the rules registered for each op's kind (`@rule(kind, ...)`, lang/rules/) and the
   whole-graph rules (`@graph_rule`): hardware legality with messages that say what
   would be legal;
4. the lowering itself, for the target: the back end plans the kernel (buffer layouts,
   register distributions, views) and refuses what it cannot express at the op's line.

So a kernel the interpreter runs is one that compiles for its architecture. The first
violation raises tg.KernelError naming the user's file:line, what is wrong and what
would be legal. `arch` defaults to the architecture the kernel's ops imply
(registry.infer_arch: tcgen05 and TMEM mean sm_100a, otherwise sm_90a).
"""
from ..errors import CompileError, KernelError
from . import opdefs  # noqa: F401  (declares every op kind)
from .arch import LIMITS
from .ir import Value
from .registry import ARCHS, infer_arch, opdef, unsupported_reason


class VerifyContext:
    """What a rule may ask about the op being checked: enclosing ops, graph, target architecture and its limits."""

    def __init__(self, graph, arch, limits):
        self.graph = graph
        self.arch = arch
        self.limits = limits
        self.enclosing = []  # ops whose regions contain the current op, outermost first

    def inside(self, kind):
        return any(op.kind == kind for op in self.enclosing)

    def enclosing_op(self, kind):
        for op in reversed(self.enclosing):
            if op.kind == kind:
                return op
        return None


EVERY_OP_RULES = []  # rules fn(op, ctx) that look at every op
GRAPH_RULES = []     # whole-graph rules fn(graph, ctx)


def rule(*kinds):
    """Registers fn(op, ctx) as a verifier rule of the op kinds `kinds` (of every op when none are given)."""
    def register(fn):
        for kind in kinds:
            opdef(kind).rules.append(fn)
        if not kinds:
            EVERY_OP_RULES.append(fn)
        return fn
    return register


def graph_rule(fn):
    GRAPH_RULES.append(fn)
    return fn


def verify(graph, arch=None, limits=None):
    """Checks `graph` for `arch` (default: the one its ops imply); raises KernelError on the first violation.

    Returns the graph, which remembers every architecture it was verified for (`graph.verified_for`)."""
    from .. import lower  # noqa: F401  (registers the lowering rules the support checks ask for)
    arch = arch or infer_arch(graph)
    if arch not in ARCHS:
        raise KernelError(f"unknown target architecture {arch!r}; tilegemm lowers to {' and '.join(ARCHS)}",
                          loc=graph.loc)
    ctx = VerifyContext(graph, arch, limits or LIMITS[arch])
    _check_scopes(graph)
    _walk(graph.body.ops, ctx)
    for fn in GRAPH_RULES:
        fn(graph, ctx)
    _check_lowering(graph, arch)
    graph.verified_for.add(arch)
    graph.target = graph.target or arch
    return graph


def _walk(ops, ctx):
    for op in ops:
        _check_support(op, ctx.arch)
        for fn in EVERY_OP_RULES:
            fn(op, ctx)
        for fn in op.opdef.rules:
            fn(op, ctx)
        if op.regions:
            ctx.enclosing.append(op)
            for r in op.regions:
                _walk(r.ops, ctx)
            ctx.enclosing.pop()


def _check_support(op, arch):
    reason = unsupported_reason(op, arch)
    if reason is not None:
        raise KernelError(f"{op.kind} cannot run on {arch}: {reason}", loc=op.loc)


def _check_lowering(graph, arch):
    """Plans the kernel's code for `arch` with the back end (lower/driver.py), which refuses what it cannot lower."""
    from ..lower.driver import plan
    try:
        plan(graph, arch)
    except CompileError as e:
        loc = getattr(e, "loc", None)
        raise KernelError(f"this kernel cannot be lowered for {arch}: {e.reason}" if loc is not None else
                          f"this kernel cannot be lowered for {arch}: {e}", loc=loc or graph.loc) from None


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
