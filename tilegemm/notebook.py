"""How tilegemm's results show in Jupyter: HTML and markdown for graphs, budget tables, tuning results and
lowered kernels, and tracebacks of tilegemm's errors without tilegemm's own frames.

`Graph`, `Budget`, `TuneResult`, tg.tune_matmul's `Tuning` and `Lowered` define `_repr_html_` and
`_repr_markdown_` with the functions here; `TileGemmError._render_traceback_`
calls `render_traceback`, which IPython uses for an error that reaches a cell.
"""
import html

from .lang import dtypes
from .lang.ir import format_graph, user_traceback

MAX_SOURCE_LINES = 2000     # a lowered module longer than this shows its head only (the file has it all)


# ----------------------------------------------------------------------------- graphs

def graph_html(graph):
    """The launch, the parameters, and the ops (one a line, with their source lines) in a collapsible block."""
    ops = sum(1 for _ in graph.walk())
    return _box(f"<b>kernel</b> <code>@{_e(graph.name)}</code> {_e(_launch(graph))}",
                _table_html(("", "param", "type"), _params(graph)),
                _details(f"{ops} ops", _pre(format_graph(graph))))


def graph_markdown(graph):
    return "\n\n".join([f"**kernel** `@{graph.name}` {_launch(graph)}",
                        _table_markdown(("", "param", "type"), _params(graph)),
                        _fence(format_graph(graph), "text")])


def _launch(graph):
    c = graph.config
    text = f"grid {tuple(c['grid'])} {tuple(c['grid_names'])}"
    if c["cluster"]:
        text += f", cluster {tuple(c['cluster'])} {tuple(c['cluster_names'])}"
    return text + f", {c['num_threads']} warpgroup(s) per block"


def _params(graph):
    return [(kind, f"%{v.id}" + (f" {v.name_hint}" if v.name_hint else ""), str(v.type))
            for kind, values in (("in", graph.inputs), ("out", graph.outputs)) for v in values]


# ----------------------------------------------------------------------------- budget tables

def budget_html(b):
    """The budget table: problem and design above, one row per figure, then what is illegal or not modelled."""
    rows = [(_e(r.name), _e(r.value), _e(r.why)) for r in b.rows]
    rows += [("<b style='color:#b00'>ILLEGAL</b>", "", _e(p)) for p in b.problems]
    rows += [("<i>not modelled</i>", "", _e(n)) for n in b.notes]
    return _box(f"<b>budget</b> {_e(_budget_head(b))}", f"design: {_e(b.config.describe())}",
                _table_html(("", "value", "why"), rows, escape=False))


def budget_markdown(b):
    rows = [(r.name, r.value, r.why) for r in b.rows]
    rows += [("**ILLEGAL**", "", p) for p in b.problems] + [("*not modelled*", "", n) for n in b.notes]
    return "\n\n".join([f"**budget** {_budget_head(b)}", f"design: {b.config.describe()}",
                        _table_markdown(("", "value", "why"), rows)])


def _budget_head(b):
    c = b.config
    return (f"{b.problem} {dtypes.name(c.dtype)} -> {dtypes.name(c.out_dtype)} on {b.device.name}: "
            f"{_ms(b.predicted_s)} predicted ({b.predicted_tflops:.1f} TFLOP/s, {b.bound}-bound); "
            f"per-block resources from the {b.resources.source}")


# ----------------------------------------------------------------------------- tuning results

TUNE_HEADER = ("rank", "predicted", "TFLOP/s", "measured", "TFLOP/s", "status", "params")


def tune_html(result):
    """The ranking: one row per legal candidate (the best in bold), then the illegal ones with their reason."""
    rows = [tuple(f"<b>{_e(x)}</b>" if c is result.best else _e(x) for x in cells) for c, cells in _tune_rows(result)]
    return _box(f"<b>tune</b> {_e(_tune_head(result))}", _table_html(TUNE_HEADER, rows, escape=False))


def tune_markdown(result):
    rows = [tuple(f"**{x}**" if c is result.best and x else x for x in cells) for c, cells in _tune_rows(result)]
    return "\n\n".join([f"**tune** {_tune_head(result)}", _table_markdown(TUNE_HEADER, rows)])


def _tune_head(result):
    m, n, k = result.shape
    kind = "measured" if result.measured else "PREDICTED by the model, not measured"
    return f"{m}x{n}x{k} on {result.device.name}: best {result.best.describe()} {_ms(result.best.seconds)} ({kind})"


def _tune_rows(result):
    """(candidate, cells) per candidate: the legal ones ranked, then the illegal ones."""
    m, n, k = result.shape
    rate = lambda s: f"{2 * m * n * k / s / 1e12:.1f}" if s is not None else ""
    for i, c in enumerate(result.ranked, 1):
        measured = _ms(c.measured_s) if c.measured_s is not None else "-"
        params = c.describe() + (f" ({c.reason})" if c.reason else "")
        yield c, (str(i), _ms(c.predicted_s), rate(c.predicted_s), measured, rate(c.measured_s), c.status, params)
    for c in result.illegal:
        yield c, ("-", "", "", "", "", c.status, f"{c.describe()}: {c.reason.splitlines()[0]}")


# ----------------------------------------------------------------------------- tg.tune_matmul's results

MATMUL_TUNING_HEADER = ("", "design", "predicted", "measured", "vs the model's pick", "check")


def matmul_tuning_html(tuning):
    """One row per design tg.tune_matmul ran (the chosen one in bold): prediction, time, speed-up, check."""
    rows = [tuple(f"<b>{_e(x)}</b>" if t is tuning.best else _e(x) for x in cells)
            for t, cells in matmul_tuning_rows(tuning)]
    return _box(f"<b>tg.tune_matmul</b> {_e(tuning.headline)}",
                _table_html(MATMUL_TUNING_HEADER, rows, escape=False))


def matmul_tuning_markdown(tuning):
    rows = [tuple(f"**{x}**" if t is tuning.best and x else x for x in cells)
            for t, cells in matmul_tuning_rows(tuning)]
    return "\n\n".join([f"**tg.tune_matmul** {tuning.headline}", _table_markdown(MATMUL_TUNING_HEADER, rows)])


def matmul_tuning_rows(tuning):
    """(trial, cells) per trial, the model's pick first: "chosen" or nothing, its design, the predicted and
    measured microseconds, the pick's time over its own, and its check (or why it was not timed)."""
    for t in tuning.trials:
        timed = t.measured_s is not None
        check = f"ok ({t.error:.1e} from float64)" if t.reason is None else t.reason
        speedup = f"{tuning.pick.measured_s / t.measured_s:.3f}x" if timed else ""
        yield t, ("chosen" if t is tuning.best else "", t.label, _us(t.predicted_s),
                  _us(t.measured_s) if timed else "-", speedup, check)


# ----------------------------------------------------------------------------- lowered kernels

def lowered_html(lowered):
    """The launch, the hardware features and (once compiled) ptxas's resources, then the highlighted source."""
    source, note = _source(lowered)
    return _box(f"<b>CuTe DSL</b> <code>{_e(lowered.generated.entry)}</code> for {_e(lowered.arch)}: "
                f"{_e(str(lowered.source_path))}",
                _table_html(("", ""), _lowered_facts(lowered)),
                _details(f"source, {len(lowered.source.splitlines())} lines{note}", _highlighted(source)))


def lowered_markdown(lowered):
    source, note = _source(lowered)
    return "\n\n".join([f"**CuTe DSL** `{lowered.generated.entry}` for {lowered.arch}: `{lowered.source_path}`",
                        _table_markdown(("", ""), _lowered_facts(lowered)),
                        f"source, {len(lowered.source.splitlines())} lines{note}:", _fence(source, "python")])


def _lowered_facts(lowered):
    launch = lowered.generated.launch
    return [("launch", launch.describe() if launch is not None else "-"),
            ("features", ", ".join(lowered.features) or "-"),
            ("resources", _compiled_resources(lowered))]


def _compiled_resources(lowered):
    """Registers, spills and shared memory as ptxas allocated them, when the kernel is compiled (in this process
    or in the disk cache); displaying never compiles."""
    from .errors import CompileError
    from .lower import cache
    from .lower.driver import from_files
    key = lowered.cache_key()
    compiled = cache.memory_get(key)
    if compiled is None:
        files = cache.disk_get(key)
        if files is None:
            return "known after .compile()"
        compiled = from_files(key, files, lowered.source_path, from_cache="disk")
    try:
        r = compiled.resources
    except CompileError as e:   # cuobjdump is not installed
        return str(e)
    return (f"{r.registers} registers/thread, {r.shared_memory:,} B shared memory/block, "
            + (f"SPILLS {r.local_bytes} B/thread to local memory" if r.spills else "no spills"))


def _source(lowered):
    """(the source to show, a note when it was cut)."""
    lines = lowered.source.splitlines()
    if len(lines) <= MAX_SOURCE_LINES:
        return lowered.source, ""
    return "\n".join(lines[:MAX_SOURCE_LINES]), f" (the first {MAX_SOURCE_LINES} shown)"


def _highlighted(source):
    """Python source as HTML, coloured by Pygments where it is installed (it comes with IPython)."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return _pre(source)
    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True))


# ----------------------------------------------------------------------------- tracebacks

def render_traceback(error):
    """IPython's traceback of a tilegemm error without tilegemm's own frames: the user's lines, then the message
    (which names the kernel's line). The error's own __traceback__ stays whole, for %debug and the traceback
    module."""
    from IPython import get_ipython
    trimmed = user_traceback(error.__traceback__)
    stb = get_ipython().InteractiveTB.structured_traceback(type(error), error, trimmed)
    hidden = _frames(error.__traceback__) - _frames(trimmed)
    if hidden:
        stb.append(f"({hidden} frame(s) inside tilegemm hidden; "
                   "`import traceback; traceback.print_exception(sys.last_value)` shows them)")
    return stb


def _frames(tb):
    count = 0
    while tb is not None:
        count, tb = count + 1, tb.tb_next
    return count


# ----------------------------------------------------------------------------- HTML and markdown pieces

def _e(text):
    return html.escape(str(text))


def _box(*parts):
    return "<div class='tilegemm'>" + "".join(f"<div>{p}</div>" for p in parts) + "</div>"


def _pre(text):
    return f"<pre>{_e(text)}</pre>"


def _details(summary, body):
    return f"<details><summary>{_e(summary)}</summary>{body}</details>"


def _table_html(header, rows, escape=True):
    cell = _e if escape else str
    head = "".join(f"<th style='text-align:left'>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{cell(x)}</td>" for x in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _table_markdown(header, rows):
    line = lambda cells: "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def _fence(text, language):
    return f"```{language}\n{text}\n```"


def _ms(seconds):
    return f"{seconds * 1e3:.3f} ms"


def _us(seconds):
    return f"{seconds * 1e6:.2f} us"
