#!/usr/bin/env bash
# Creates .venv (once) and installs tilegemm with its test extras into it, and CPU builds of torch and jax for
# the tests of tilegemm.torch and tilegemm.jax where .venv has none of its own (a GPU machine keeps its CUDA
# builds). Their versions are pinned, so that pip takes CPU wheels and not multi-GB CUDA builds.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
pip_install() { .venv/bin/python -m pip install -q "$@" 2>&1 | grep -v "^WARNING: Location" || true; }
importable() { .venv/bin/python -c "import $1" 2>/dev/null; }
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
pip_install -e ".[test]"
.venv/bin/python -c "import tilegemm" # fails loudly if the install did not work
if ! importable torch; then
  pip_install torch==2.13.0
  .venv/bin/python -c "import torch"
fi
if ! importable jax; then
  if .venv/bin/python -c "import sys; sys.exit(sys.version_info < (3, 11))"; then
    pip_install jax==0.10.2 jaxlib==0.10.2
    .venv/bin/python -c "import jax"
  else
    echo "setup.sh: jax 0.10.2 needs Python >= 3.11; the tests of tilegemm.jax will skip" >&2
  fi
fi
