#!/usr/bin/env bash
# Mutation testing of tilegemm's core (see scripts/mutation.py): plants one small bug at a time in the verifier,
# interpreter, Hopper lowering, compile cache, runtime checks, performance model and tg.matmul's designs, runs
# the tests that cover the module, and reports the fraction of mutants the tests kill (with --standing, also in
# benchmarks/standing.json). Runs niced; each mutant runs in a private copy of the repository.
#   bash scripts/mutation.sh                           # every core module (hours on one core)
#   bash scripts/mutation.sh tilegemm/model/budget.py  # one module; globs work: 'tilegemm/interpret/*'
#   bash scripts/mutation.sh --list                    # modules, their tests and mutant counts
#   bash scripts/mutation.sh --budget 1800 --jobs 2    # stop starting mutants after 30 min; two at a time
#   bash scripts/mutation.sh --retest benchmarks/mutation/mutation-<date>.json   # re-run only its survivors
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
exec nice -n 10 "$PY" scripts/mutation.py "$@"
