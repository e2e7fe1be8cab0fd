"""The committed generated source of the flagship (docs/generated) is what the lowering generates today."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_committed_flagship_source_is_current():
    spec = importlib.util.spec_from_file_location("write", os.path.join(ROOT, "docs", "generated", "write.py"))
    write = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(write)
    with open(write.PATH) as f:
        committed = f.read()
    assert committed == write.flagship_source(), \
        "docs/generated is stale: run `python docs/generated/write.py` and commit the result"
