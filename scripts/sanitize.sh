#!/usr/bin/env bash
# compute-sanitizer's memcheck, racecheck and synccheck over tg.matmul and every Hopper example at ragged shapes
# (scripts/sanitize_targets.py), on a machine with a Hopper GPU and nvidia-cutlass-dsl importable. Kernels are
# compiled once before the sanitizer runs. Logs and a summary (sanitizer.json) go to ${OUT:-out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 scripts/sanitize_targets.py "$@" > "$OUT/sanitizer-warmup.log" 2>&1 || { cat "$OUT/sanitizer-warmup.log"; exit 1; }
total=0
summary="{"
for tool in memcheck racecheck synccheck; do
  # API errors are left out: cuda-python probes driver entry points that do not exist (cuGetProcAddress).
  compute-sanitizer --tool "$tool" --report-api-errors no --print-limit 20 \
    python3 scripts/sanitize_targets.py "$@" > "$OUT/sanitizer-$tool.log" 2>&1
  rc=$?
  # memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY: ... (N errors"
  errors=$(grep -oE "ERROR SUMMARY: [0-9]+|RACECHECK SUMMARY: .*\([0-9]+ errors" "$OUT/sanitizer-$tool.log" \
           | tail -1 | grep -oE "[0-9]+( errors)?$" | grep -oE "^[0-9]+")
  errors=${errors:-unknown}
  echo "$tool: ${errors} errors (exit $rc); $(grep -c ': ok ' "$OUT/sanitizer-$tool.log") results checked"
  [ "$errors" = "unknown" ] && errors=1
  total=$((total + errors + (rc != 0)))
  summary="$summary\"$tool\": $errors, "
done
echo "${summary}\"sanitizer_errors\": $total}" > "$OUT/sanitizer.json"
cat "$OUT/sanitizer.json"
exit $((total != 0))
