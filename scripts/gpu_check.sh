#!/usr/bin/env bash
# The correctness check on the GPU machine, in one go (from the repository root, with
# .whl carried there: make it with scripts/fetch_wheels.sh first; the setup is
# scripts/gpu.sh's):
#
#   scripts/gpu_check.sh [sweep|tests|all]      (default: all)
#
# sweep: benchmarks/check_corpus.py, every corpus program under every configuration
#        (compiled on every core, run at the programs' ragged check sizes against the
#        interpreter) -> benchmarks/results/check-corpus-<date>-<device>.json, and
#        $OUT/check-corpus.log and the JSON when $OUT is set
# tests: python3 -m pytest -q -n 4 tests/test_gpu_check.py tests/test_gpu_*.py -m gpu
#                                                  -> $OUT/gpu-check-tests.log
# Each part takes a few minutes on an H100 host with 16 cores; where one command may run
# at most 10 minutes, run the two parts as two commands.
# Exit status: non-zero if a selected part failed.
set -uo pipefail
cd "$(dirname "$0")/.."

part="${1:-all}"
case "$part" in
  sweep | tests | all) ;;
  *)
    echo "usage: scripts/gpu_check.sh [sweep|tests|all]" >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
echo "cores: $(nproc)"

date=$(date +%Y-%m-%d)
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 \
  | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/-$//')
device="${device:-unknown}"

sweep_status="skipped"
if [ "$part" = sweep ] || [ "$part" = all ]; then
  echo "== check_corpus"
  json="benchmarks/results/check-corpus-$date-$device.json"
  python3 benchmarks/check_corpus.py --json "$json" 2>&1 | tee "$logdir/check-corpus.log"
  case ${PIPESTATUS[0]} in
    0) sweep_status="ok" ;;
    *) sweep_status="FAILED" ;;
  esac
  [ -f "$json" ] && [ -n "${OUT:-}" ] && cp "$json" "$OUT/"
fi

tests_status="skipped"
if [ "$part" = tests ] || [ "$part" = all ]; then
  echo "== gpu tests"
  python3 -m pytest -q -p no:cacheprovider -n 4 tests/test_gpu_check.py tests/test_gpu_*.py \
    -m gpu 2>&1 | tee "$logdir/gpu-check-tests.log"
  case ${PIPESTATUS[0]} in
    0) tests_status="ok" ;;
    *) tests_status="FAILED" ;;
  esac
fi

echo
echo "== summary"
[ -f "$logdir/check-corpus.log" ] && [ "$sweep_status" != skipped ] \
  && grep -E '^(checked|compiles|FAILED)' "$logdir/check-corpus.log"
[ "$tests_status" != skipped ] && tail -n 1 "$logdir/gpu-check-tests.log"
printf '%-6s %s\n' sweep "$sweep_status" tests "$tests_status"
case "$sweep_status/$tests_status" in
  *FAILED*) exit 1 ;;
esac
exit 0
