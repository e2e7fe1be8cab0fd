"""docs/graph-ir.md documents the op kinds the registry declares, and only those; docs/adding-a-primitive.md
names files that exist."""
import os
import re

from tilegemm.lang.registry import OPS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = open(os.path.join(ROOT, "docs", "graph-ir.md")).read()


def test_the_op_tables_name_every_declared_op_kind_and_no_other():
    rows = re.findall(r"^\| `([a-z0-9_]+)`(?: / `([a-z0-9_]+)`)? \|", TEXT, re.M)
    documented = {kind for row in rows for kind in row if kind}
    assert sorted(set(OPS) - documented) == [] and sorted(documented - set(OPS)) == []


def test_the_adding_a_primitive_walk_through_names_files_that_exist():
    text = open(os.path.join(ROOT, "docs", "adding-a-primitive.md")).read()
    paths = set(re.findall(r"`(tilegemm/[\w/]+\.py)`", text)) | set(re.findall(r"`(tests/[\w/]+\.py)`", text))
    assert len(paths) > 5
    assert [p for p in sorted(paths) if not os.path.exists(os.path.join(ROOT, p))] == []
