"""docs/tutorial.md runs as written: its Python blocks run in order (numpy interpreter, no GPU) and print exactly
the output shown after them."""
import contextlib
import io
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUTORIAL = os.path.join(ROOT, "docs", "tutorial.md")


def blocks():
    """(python code, the text block right after it or None) for every python block of the tutorial."""
    text = open(TUTORIAL).read()
    found = re.findall(r"```python\n(.*?)```\n(?:\n```text\n(.*?)```\n)?", text, re.S)
    return [(code, output if output else None) for code, output in found]


def test_the_tutorial_has_a_block_per_rung():
    assert len(blocks()) == 8 and sum(output is not None for _, output in blocks()) == 7


def test_every_block_prints_what_the_tutorial_shows(monkeypatch):
    monkeypatch.chdir(ROOT)
    scope = {}
    for i, (code, shown) in enumerate(blocks()):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{TUTORIAL} block {i}", "exec"), scope)
        if shown is not None:
            assert printed.getvalue() == shown, f"block {i} of docs/tutorial.md printed:\n{printed.getvalue()}"
