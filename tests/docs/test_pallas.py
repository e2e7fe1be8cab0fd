"""docs/pallas.md names only what exists: every `tg.` name in tilegemm and, where JAX is installed, every `pl.` and
`plgpu.` name in JAX's Pallas modules (read as source: importing Mosaic GPU needs more than JAX)."""
import importlib.util
import os
import re

import pytest

import tilegemm as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = open(os.path.join(ROOT, "docs", "pallas.md")).read()


def names(prefix):
    """The names written `prefix.name` in code spans of docs/pallas.md ('atomic_*' keeps its star)."""
    spans = re.findall(r"`([^`]*)`", TEXT)
    return sorted({m for span in spans for m in re.findall(rf"(?<![\w.]){re.escape(prefix)}\.(\w+\*?)", span)})


def test_every_tilegemm_name_in_the_table_exists():
    found = names("tg")
    assert len(found) > 50
    assert [name for name in found if not hasattr(tg, name)] == []


@pytest.mark.parametrize("prefix, module", [("pl", "__init__.py"), ("plgpu", "mosaic_gpu.py")])
def test_every_pallas_name_in_the_table_is_exported_by_jax(prefix, module):
    spec = importlib.util.find_spec("jax")
    if spec is None:
        pytest.skip("JAX is not installed")
    source = open(os.path.join(os.path.dirname(spec.origin), "experimental", "pallas", module)).read()
    exported = set(re.findall(r"\bas (\w+)", source)) | set(re.findall(r"^(\w+) = ", source, re.M))
    missing = [name for name in names(prefix)
               if not (any(e.startswith(name[:-1]) for e in exported) if name.endswith("*") else name in exported)]
    assert missing == []
