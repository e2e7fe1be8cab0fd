"""Trace state: the graph being built and the stack of open regions.

Every primitive calls `emit`, which appends an op of a declared kind (lang/opdefs.py) to the innermost open
region and stamps it with the user's source line.
"""
import contextlib

from ..errors import KernelError
from . import opdefs  # noqa: F401  (declares every op kind)
from .ir import Op, Region, Value, current_user_loc
from .registry import opdef

_STATE = []  # stack of _Trace (nested traces are allowed, e.g. a kernel traced while tracing)

# Filled by lang/values.py: which Value subclass wraps each type.
VALUE_CLASSES = {}


class _Trace:
    def __init__(self, graph):
        self.graph = graph
        self.regions = [graph.body]


def _state():
    if not _STATE:
        raise KernelError(
            "tilegemm primitives can only be called while a kernel is being traced "
            "(inside a function passed to tg.kernel)", loc=current_user_loc())
    return _STATE[-1]


def current_graph():
    return _state().graph


@contextlib.contextmanager
def tracing(graph):
    """Makes `graph` the target of emitted ops for the duration of the block."""
    _STATE.append(_Trace(graph))
    try:
        yield graph
    finally:
        _STATE.pop()


def current_region():
    """The innermost open region: where the next emitted op goes."""
    return _state().regions[-1]


def new_value(type, loc=None, name_hint=None):
    cls = VALUE_CLASSES[type.__class__]
    return current_graph().new_value(cls, type, loc, name_hint)


def emit(kind, operands=(), attrs=None, result_types=(), regions=(), loc=None):
    """Appends an op of the declared `kind` to the current region and returns it (results already created).

    `operands` are given by name (a dict, as the kind declares them) or in their declared order."""
    st = _state()
    loc = loc or current_user_loc()
    declared = opdef(kind)
    operands = declared.bind(dict(operands)) if isinstance(operands, dict) else tuple(operands)
    attrs = dict(attrs or {})
    if set(attrs) != set(declared.attrs) or len(regions) != declared.regions:
        raise TypeError(f"{kind} declares attributes {declared.attrs} and {declared.regions} region(s); got "
                        f"{tuple(attrs)} and {len(regions)}")
    for o in operands:
        if isinstance(o, Value) and o.graph is not st.graph:
            raise KernelError(
                f"a value from another kernel trace (defined at {o.loc}) is used here; "
                "values and refs only live inside the kernel trace that created them", loc=loc)
    results = tuple(st.graph.new_value(VALUE_CLASSES[t.__class__], t, loc) for t in result_types)
    op = Op(kind, operands, attrs, results, tuple(regions), loc)
    for r in results:
        r.producer = op
    st.regions[-1].ops.append(op)
    return op


@contextlib.contextmanager
def region(arg_types=()):
    """Opens a nested region; ops emitted inside the block go into it."""
    st = _state()
    r = Region(args=[new_value(t) for t in arg_types])
    for a in r.args:
        a.producer = None
    st.regions.append(r)
    try:
        yield r
    finally:
        st.regions.pop()
