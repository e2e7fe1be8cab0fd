"""docs/api.md is the API reference generated from today's docstrings, and it covers every public name."""
import importlib.util
import os
import types

import tilegemm as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def writer():
    spec = importlib.util.spec_from_file_location("write_api_docs", os.path.join(ROOT, "scripts", "write_api_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_api_reference_is_current():
    write = writer()
    with open(write.PATH) as f:
        committed = f.read()
    assert committed == write.api_markdown(), \
        "docs/api.md is stale: run `python scripts/write_api_docs.py` and commit the result"


def test_every_public_name_of_tg_and_its_packages_has_an_entry():
    text = writer().api_markdown()
    names = [name for name in dir(tg) if not name.startswith("_") and not isinstance(getattr(tg, name), types.ModuleType)]
    names += [f"{package}.{name}" for package in ("model", "tune", "testing") for name in getattr(tg, package).__all__]
    missing = [name for name in names if f"### `tg.{name}" not in text]
    assert not missing, f"not in docs/api.md: {missing}"
