"""The graph IR: typed values, ops with nested regions, source locations.

A Graph is what tracing a kernel produces and what every later stage
(verifier, interpreter, lowering, model) consumes. Ops are plain records;
their meaning is documented where they are created (lang/primitives.py,
lang/control.py, lang/values.py).
"""
import hashlib
import os
import sys
import types
from dataclasses import dataclass, field

import numpy as np

from . import dtypes
from .registry import OPS


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's source code."""
    file: str
    line: int
    function: str = ""

    def __str__(self):
        return f"{self.file}:{self.line}"


class Value:
    """A typed SSA value. Subclasses (Scalar, Array, Ref) add the tracing sugar."""

    def __init__(self, type, graph, id, loc=None, name_hint=None):
        self.type = type
        self.graph = graph
        self.id = id
        self.loc = loc
        self.name_hint = name_hint
        self.producer = None  # the Op that defined it (None for params and region args)

    def __repr__(self):
        return f"%{self.id}:{self.type}"

    def __hash__(self):
        return id(self)

    def __bool__(self):
        from ..errors import KernelError
        raise KernelError(
            "a traced value has no Python truth value: it is only known when the kernel runs. "
            "Use tg.when(cond) for a conditional region, or tg.select(cond, a, b) for a value",
            loc=current_user_loc())


@dataclass(eq=False)
class Region:
    """An ordered list of ops, with block arguments (loop index, carries)."""
    args: list = field(default_factory=list)
    ops: list = field(default_factory=list)


@dataclass(eq=False)
class Op:
    """One recorded operation: kind, value operands (or Python literals), static attrs, results, regions.

    Its kind is declared in lang/opdefs.py (lang/registry.py), which names its operands: `op.arg("barrier")`."""
    kind: str
    operands: tuple
    attrs: dict
    results: tuple
    regions: tuple
    loc: SourceLoc

    @property
    def result(self):
        (r,) = self.results
        return r

    @property
    def opdef(self):
        """The declaration of this op's kind (lang/registry.OpDef)."""
        return OPS[self.kind]

    def arg(self, name):
        """The operand declared as `name` (None for an optional one left out; a tuple for a variadic one)."""
        return OPS[self.kind].arg(self, name)

    def walk(self):
        """Yields this op and every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            for op in region.ops:
                yield from op.walk()


class Graph:
    """A traced kernel: launch configuration, parameters and a body region."""

    def __init__(self, name, config, loc):
        self.name = name
        self.config = config  # dict: grid, grid_names, cluster, cluster_names, num_threads, thread_name
        self.loc = loc
        self.inputs = []
        self.outputs = []
        self.aliases = {}   # {input index: output index}: the output is the input's memory (input_output_aliases)
        self.body = Region()
        self._next_id = 0
        self.target = None          # the architecture the kernel targets: the first it was verified for
        self.verified_for = set()   # every architecture lang.verify accepted it for

    def new_value(self, cls, type, loc=None, name_hint=None):
        v = cls(type, self, self._next_id, loc, name_hint)
        self._next_id += 1
        return v

    @property
    def params(self):
        return self.inputs + self.outputs

    def walk(self):
        """Yields every op of the body, nested ops included, in program order."""
        for op in self.body.ops:
            yield from op.walk()

    def axis_sizes(self):
        """Maps every named axis (grid, cluster, thread) to its size."""
        c = self.config
        sizes = dict(zip(c["grid_names"], c["grid"]))
        sizes.update(zip(c["cluster_names"], c["cluster"]))
        if c["thread_name"] is not None:
            sizes[c["thread_name"]] = c["num_threads"]
        return sizes

    def __str__(self):
        return format_graph(self, with_locs=True)

    def __repr__(self):
        return f"<tilegemm Graph @{self.name}: {sum(1 for _ in self.walk())} ops, grid {tuple(self.config['grid'])}>"

    def _repr_html_(self):
        from ..notebook import graph_html
        return graph_html(self)

    def _repr_markdown_(self):
        from ..notebook import graph_markdown
        return graph_markdown(self)

    def fingerprint(self):
        """A stable hash of everything that affects code generation (locations excluded)."""
        return hashlib.sha256(format_graph(self, with_locs=False).encode()).hexdigest()[:32]


def _fmt_operand(x):
    if isinstance(x, Value):
        return f"%{x.id}"
    return _fmt_attr(x)


def _fmt_attr(x):
    if isinstance(x, np.dtype):
        return dtypes.name(x)
    if isinstance(x, tuple):
        return "(" + ", ".join(_fmt_attr(e) for e in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, Value):
        return f"%{x.id}"
    return repr(x)


def format_op(op, indent, with_locs, lines):
    pad = "  " * indent
    res = ", ".join(f"%{r.id}" for r in op.results)
    lhs = f"{res} = " if res else ""
    ops = ", ".join(_fmt_operand(o) for o in op.operands)
    attrs = " ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs.items() if v is not None)
    types = ", ".join(str(r.type) for r in op.results)
    text = f"{pad}{lhs}{op.kind}({ops})"
    if attrs:
        text += " {" + attrs + "}"
    if types:
        text += f" : {types}"
    if op.regions:
        text += " {"
    if with_locs and op.loc is not None:
        text = f"{text:<88}  # {op.loc}"
    lines.append(text)
    for i, region in enumerate(op.regions):
        if i:
            lines.append(f"{pad}}} else {{")
        if region.args:
            lines.append(f"{pad}  ^(" + ", ".join(f"%{a.id}: {a.type}" for a in region.args) + ")")
        for inner in region.ops:
            format_op(inner, indent + 1, with_locs, lines)
    if op.regions:
        lines.append(f"{pad}}}")


def format_graph(graph, with_locs=True):
    c = graph.config
    head = f"kernel @{graph.name} grid={tuple(c['grid'])}{list(c['grid_names'])}"
    if c["cluster"]:
        head += f" cluster={tuple(c['cluster'])}{list(c['cluster_names'])}"
    head += f" threads={c['num_threads']}"
    if c["thread_name"]:
        head += f"[{c['thread_name']}]"
    if c["dependent_launch"]:
        head += " dependent_launch"
    lines = [head]
    for kind, vals in (("in", graph.inputs), ("out", graph.outputs)):
        for v in vals:
            named = f" ({v.name_hint})" if v.name_hint else ""
            lines.append(f"  {kind} %{v.id}{named}: {v.type}")
    for op in graph.body.ops:
        format_op(op, 1, with_locs, lines)
    return "\n".join(lines)


def current_user_loc():
    """The innermost stack frame outside tilegemm's machinery: where the user called us.

    Kernels shipped in tilegemm/ops are user code in this sense: their lines are reported.
    Inside a Jupyter notebook the file is the cell: 'Cell In[3]'.
    """
    f = sys._getframe(1)
    while f is not None:
        if not _internal(f.f_code):
            return SourceLoc(_short_path(f.f_code.co_filename), f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def user_traceback(tb):
    """A copy of traceback `tb` without the frames of tilegemm's machinery (None if it has no others), so that
    an error in a user's kernel shows the user's lines only. `tb` itself is left whole (for debuggers)."""
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame.f_code):
            kept.append(tb)
        tb = tb.tb_next
    trimmed = None
    for entry in reversed(kept):
        trimmed = types.TracebackType(trimmed, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return trimmed


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_KERNELS = os.path.join(_PACKAGE, "ops") + os.sep


def _internal(code):
    """True for the code of tilegemm's machinery: the package except its kernels (tilegemm/ops), and the
    `__init__` dataclasses generate."""
    if code.co_filename == "<string>" and code.co_name in ("__init__", "__post_init__"):
        return True
    path = os.path.abspath(code.co_filename)
    return path.startswith(_PACKAGE + os.sep) and not path.startswith(_KERNELS)


def _short_path(path):
    """How a location names a file: 'Cell In[3]' for a notebook cell, else the path relative to the working
    directory when it is below it, else the absolute path."""
    cell = _notebook_cell(path)
    if cell is not None:
        return cell
    path = os.path.abspath(path)
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _notebook_cell(path):
    """'Cell In[N]' when `path` is the file IPython compiled input cell N into (IPython names it in tracebacks
    the same way), else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(path)
    return f"Cell In[{number}]" if number is not None else None
