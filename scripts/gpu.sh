#!/usr/bin/env bash
# The one script the GPU machine runs (from the repository root, with .whl carried there;
# make it with scripts/fetch_wheels.sh first).
#
#   scripts/gpu.sh [tests|solver|bench|all]      (default: all)
#
# tests:  python3 -m pytest -m gpu -q tests        -> $OUT/gpu-tests.log when $OUT is set
# solver: the same GPU tests with every kernel planned by the solver (TAWAC_SCHEDULE=solver)
#                                                  -> $OUT/gpu-tests-solver.log
# bench:  benchmarks/bench_gemm.py and bench_attention.py, each with the solver planner's
#         kernel in the same run                   -> $OUT/bench.log and $OUT/bench.json
# The solver's answers are read from .solver-cache when it was carried (it is filled by
# any run here with TAWAC_CACHE_DIR=.solver-cache): a miss solves on the spot.
# A short summary is printed last.  Exit status: non-zero if a selected part failed.
set -uo pipefail
cd "$(dirname "$0")/.."

part="${1:-all}"
case "$part" in
  tests | solver | bench | all) ;;
  *)
    echo "usage: scripts/gpu.sh [tests|solver|bench|all]" >&2
    exit 2
    ;;
esac

if ! ls .whl/*.whl >/dev/null 2>&1; then
  echo "gpu.sh: no wheels in .whl (run scripts/fetch_wheels.sh here and carry .whl)" >&2
  exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD"
export PATH="/usr/local/cuda/bin:/tmp/site/bin:$PATH"
export PYTHONUNBUFFERED=1
export TAWAC_CACHE_DIR="$PWD/.solver-cache"

logdir="${OUT:-/tmp/tawac-gpu}"
mkdir -p "$logdir"

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
ptxas --version | tail -n 1 || echo "ptxas: not found"
python3 -c 'import torch, xdsl; print("torch", torch.__version__, "| xdsl", xdsl.__version__)'

tests_status="skipped"
tests_detail=""
if [ "$part" = tests ] || [ "$part" = all ]; then
  echo "== gpu tests"
  python3 -m pytest -m gpu -q tests 2>&1 | tee "$logdir/gpu-tests.log"
  rc=${PIPESTATUS[0]}
  tests_detail=$(grep -E '(passed|failed|error|no tests ran|deselected)' "$logdir/gpu-tests.log" \
    | tail -n 1)
  case $rc in
    0) tests_status="ok" ;;
    5) tests_status="none" ;;  # no test carries the gpu marker yet
    *) tests_status="FAILED($rc)" ;;
  esac
fi

solver_status="skipped"
solver_detail=""
if [ "$part" = solver ] || [ "$part" = all ]; then
  echo "== gpu tests, solver planner"
  TAWAC_SCHEDULE=solver python3 -m pytest -m gpu -q tests 2>&1 | tee "$logdir/gpu-tests-solver.log"
  rc=${PIPESTATUS[0]}
  solver_detail=$(grep -E '(passed|failed|error|no tests ran|deselected)' \
    "$logdir/gpu-tests-solver.log" | tail -n 1)
  case $rc in
    0) solver_status="ok" ;;
    *) solver_status="FAILED($rc)" ;;
  esac
fi

bench_status="skipped"
if [ "$part" = bench ] || [ "$part" = all ]; then
  echo "== bench"
  python3 benchmarks/bench_gemm.py --solver --json "$logdir/bench.json" 2>&1 \
    | tee "$logdir/bench.log"
  rc=${PIPESTATUS[0]}
  python3 benchmarks/bench_attention.py --alt planner=solver 2>&1 \
    | tee "$logdir/bench-attention.log"
  rc_att=${PIPESTATUS[0]}
  [ "$rc" = 0 ] && rc=$rc_att
  case $rc in
    0) bench_status="ok" ;;
    *) bench_status="FAILED($rc)" ;;
  esac
fi

echo
echo "== summary"
printf '%-6s %-12s %s\n' part status detail
printf '%-6s %-12s %s\n' tests "$tests_status" "$tests_detail"
printf '%-6s %-12s %s\n' solver "$solver_status" "$solver_detail"
printf '%-6s %-12s %s\n' bench "$bench_status" "logs in $logdir"
if [ -f "$logdir/bench.log" ] && [ "$bench_status" != skipped ]; then
  # The benchmark table (without the traceback of a failed compile, if any).
  sed -n '/^bf16 GEMM/,$p' "$logdir/bench.log"
  sed -n '/^bf16 attention/,$p' "$logdir/bench-attention.log"
fi

case "$tests_status/$solver_status/$bench_status" in
  *FAILED*) exit 1 ;;
esac
exit 0
