#!/usr/bin/env bash
# Sets up .venv and runs the test suite (GPU tests are skipped where no GPU is present).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q "$@"
