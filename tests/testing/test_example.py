"""The user's test file of docs/testing.md (examples/testing/test_my_kernel.py) is printed there as it is, is
under 30 lines, and passes under pytest: in the interpreter here, and on the GPU where one is present."""
import os
import re

import tilegemm.testing as tt

from .fresh_process import ROOT, run_pytest

TEST_FILE = os.path.join(ROOT, "examples", "testing", "test_my_kernel.py")


def test_the_docs_print_the_example_test_file_as_it_is():
    with open(os.path.join(ROOT, "docs", "testing.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    with open(TEST_FILE) as f:
        assert f.read() in blocks


def test_the_example_test_file_is_under_30_lines():
    with open(TEST_FILE) as f:
        assert len(f.read().splitlines()) < 30


def test_the_example_test_file_passes_under_pytest(tmp_path):
    code, output = run_pytest(TEST_FILE, cwd=tmp_path)
    gpu = tt.gpu.unavailable_reason() is None
    assert code == 0 and ("3 passed" if gpu else "2 passed, 1 skipped") in output, output
