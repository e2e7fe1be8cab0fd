#!/usr/bin/env bash
# Sets up .venv and runs the main job: the flagship Hopper example through every stage
# (trace + verify, budget table, lower + compile for sm_90a, numpy interpreter; on a GPU, a run vs cuBLAS).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m tilegemm "$@"
