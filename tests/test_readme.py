"""The README's kernel example runs as printed (trace, interpreter, budget table, lowering)."""
import os
import re

import numpy as np

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_the_readme_kernel_runs_and_matches_numpy(capsys):
    text = open(README).read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    scope = {}
    exec(compile(code, README, "exec"), scope)
    a, b, c = scope["a"], scope["b"], scope["c"]
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-2
    printed = capsys.readouterr().out
    assert "wgmma(" in printed and "predicted time" in printed and "@cute.kernel" in printed
