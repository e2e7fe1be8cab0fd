"""Running Python and pytest in a fresh process on this checkout, as a user's project runs them."""
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def checkout_env():
    """The environment with this checkout first on PYTHONPATH."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))


def run_pytest(path, *options, cwd):
    """pytest -p tilegemm.testing.plugin on the file `path` from `cwd`; returns (exit code, output)."""
    command = [sys.executable, "-m", "pytest", "-p", "tilegemm.testing.plugin", "-p", "no:cacheprovider",
               "--strict-markers", "-q", "-rs", *options, str(path)]
    done = subprocess.run(command, cwd=cwd, env=checkout_env(), capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr
