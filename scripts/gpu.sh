#!/usr/bin/env bash
# On a GPU machine (the device tool's H200), in one call: the GPU tests, then the benchmark
# (arguments go to benchmarks/bench_hopper.py; default --quick).
# `--part I/N` first: only part I of N of the GPU test files (scripts/gpu_parts.py), and no benchmark, so that
# every GPU test runs within N calls of a limited time.
# Expects nvidia-cutlass-dsl on PYTHONPATH (see README "Running on the GPU"). Logs go to ${OUT:-out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ "${1:-}" = "--part" ]; then
  files=$(python3 scripts/gpu_parts.py "${2:-}") || exit 2
  python3 -m pytest -m gpu -q -p no:cacheprovider $files 2>&1 | tee "$OUT/gpu-tests-part-${2%/*}.log"
  exit "${PIPESTATUS[0]}"
fi
python3 -m pytest -m gpu -q -p no:cacheprovider tests 2>&1 | tee "$OUT/gpu-tests.log"
tests_rc=${PIPESTATUS[0]}
python3 benchmarks/bench_hopper.py "${@:---quick}" --out "$OUT" 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
echo "gpu tests exit $tests_rc, benchmark exit $bench_rc"
exit $(( tests_rc || bench_rc ))
