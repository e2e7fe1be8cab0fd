"""Writes docs/api.md, the API reference, from the docstrings of tilegemm's public API (`tg.*`).

    python scripts/write_api_docs.py        # rewrites docs/api.md

The public API is what tilegemm/__init__.py exports: the language (tilegemm.lang's
__all__, grouped by the module that defines each name), kernels and tg.matmul,
errors, debugging switches, and the tg.model, tg.tune and tg.testing packages
(their __all__), plus the objects `Kernel.lower` returns. tests/docs/test_api.py
fails when the committed file no longer matches; run this script to refresh it.
"""
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tilegemm as tg  # noqa: E402
from tilegemm import lang, lower, model, testing, tune  # noqa: E402

PATH = os.path.join(ROOT, "docs", "api.md")

# (section title, what it is, [(prefix, object name, object)]); the language's sections follow from lang.__all__.
TOP = [
    ("Kernels", "Writing, tracing, running and lowering a kernel; `tg.matmul`, the ready-made one, and "
     "`tg.tune_matmul`, which chooses its design by measuring.",
     [("tg", name, getattr(tg, name)) for name in ("kernel", "Kernel", "ShapeDtype", "matmul", "tune_matmul",
                                                   "interpret")]),
    ("Errors and warnings", "Every error tilegemm raises on purpose is a `tg.TileGemmError`.",
     [("tg", name, getattr(tg, name)) for name in ("TileGemmError", "KernelError", "ArgumentError", "LaunchError",
                                                   "CompileError", "DeadlockError", "RaceError", "HangError",
                                                   "PerformanceWarning", "CompiledCodeWarning")]),
    ("Debugging switches", inspect.getdoc(tg.debug).split("\n\n")[0],
     [("tg", name, getattr(tg, name)) for name in ("Debug", "set_debug", "get_debug")]),
]
PACKAGES = [("tg.model", model), ("tg.tune", tune), ("tg.testing", testing)]
LOWERED = ("Lowering results", "What `Kernel.lower(...)` returns and what its `.compile()` returns.",
           [("tilegemm.lower", "Lowered", lower.Lowered), ("tilegemm.lower", "CompiledKernel", lower.CompiledKernel)])


def api_markdown():
    """docs/api.md as text."""
    lines = ["# API reference", "",
             "Generated from the docstrings by `scripts/write_api_docs.py`; do not edit "
             "(`tests/docs/test_api.py` fails when this file is stale). `import tilegemm as tg`.", ""]
    sections = [TOP[0], *language_sections(), *TOP[1:], *package_sections(), LOWERED]
    lines += ["## Contents", ""] + [f"- [{title}](#{_anchor(title)})" for title, _, _ in sections] + [""]
    for title, what, entries in sections:
        lines += [f"## {title}", "", what, ""]
        for prefix, name, obj in entries:
            lines += entry(prefix, name, obj)
    return "\n".join(lines).rstrip() + "\n"


def language_sections():
    """One section per module of tilegemm.lang, in the order its names first appear in lang.__all__."""
    by_module = {}
    elsewhere = {name for _, _, entries in TOP for _, name, _ in entries}
    for name in (n for n in lang.__all__ if n not in elsewhere):
        obj = getattr(tg, name)
        module = getattr(obj, "__module__", None) if inspect.isclass(obj) or callable(obj) else None
        by_module.setdefault(module or "tilegemm.lang.dtypes", []).append(("tg", name, obj))
    return [(f"The language: {module.rsplit('.', 1)[1]}", _summary(sys.modules[module]), entries)
            for module, entries in by_module.items()]


def package_sections():
    return [(prefix, _summary(package), [(prefix, name, getattr(package, name)) for name in package.__all__])
            for prefix, package in PACKAGES]


def entry(prefix, name, obj):
    """The heading, signature and docstring of one name; a class adds its public methods and properties."""
    lines = [f"### `{prefix}.{name}{_signature(obj)}`", "", _doc(obj), ""]
    if inspect.isclass(obj):
        for member, value in _members(obj):
            lines += [f"- **`.{member}{_signature(value)}`**" + (f": {_doc(value)}" if _doc(value) else ""), ""]
    return lines


def _members(cls):
    """Public methods and properties defined by `cls` (not inherited from builtins), in definition order."""
    seen = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ == "builtins":
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and (callable(value) or isinstance(value, property)
                                             or hasattr(value, "__get__") and getattr(value, "__doc__", None)):
                seen[name] = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
    fields = getattr(cls, "__dataclass_fields__", {})   # a dataclass's fields are in its signature
    return [(name, value) for name, value in seen.items() if name not in fields]


def _signature(obj):
    if isinstance(obj, property) or not callable(obj) or inspect.isclass(obj) and issubclass(obj, BaseException):
        return ""
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    text = re.sub(r"\((self|cls),? ?", "(", text)
    text = re.sub(r"=<object object at 0x[0-9a-f]+>", "", text)   # a "missing" sentinel: shown without default
    return re.sub(r"<function (\w+) at 0x[0-9a-f]+>", r"\1", text)   # no addresses in a committed file


def _doc(obj):
    if isinstance(obj, dict):
        return "A dict with keys " + ", ".join(f"`{key!r}`" for key in obj) + "."
    if not (inspect.isclass(obj) or callable(obj) or isinstance(obj, property)):
        return f"The numpy dtype `{obj}`."
    return inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""


def _summary(module):
    return (inspect.getdoc(module) or "").split("\n\n")[0]


def _anchor(title):
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


if __name__ == "__main__":
    with open(PATH, "w") as f:
        f.write(api_markdown())
    print(f"wrote {os.path.relpath(PATH)}")
