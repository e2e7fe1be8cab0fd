"""docs/graph-ir.md documents the op kinds the registry declares, and only those."""
import os
import re

from tilegemm.lang.registry import OPS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = open(os.path.join(ROOT, "docs", "graph-ir.md")).read()


def test_the_op_tables_name_every_declared_op_kind_and_no_other():
    rows = re.findall(r"^\| `([a-z0-9_]+)`(?: / `([a-z0-9_]+)`)? \|", TEXT, re.M)
    documented = {kind for row in rows for kind in row if kind}
    assert sorted(set(OPS) - documented) == [] and sorted(documented - set(OPS)) == []
