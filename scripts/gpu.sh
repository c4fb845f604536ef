#!/usr/bin/env bash
# The one script the GPU machine runs (from the repository root, with .whl carried there;
# make it with scripts/fetch_wheels.sh first).
#
#   scripts/gpu.sh [tests|solver|bench|tune|launch|all]      (default: all)
#
# tests:  python3 -m pytest -m gpu -q -n 4 tests   -> $OUT/gpu-tests.log when $OUT is set
# solver: the same GPU tests with every kernel planned by the solver (TAWAC_SCHEDULE=solver)
#                                                  -> $OUT/gpu-tests-solver.log
# bench:  benchmarks/bench_gemm.py and bench_attention.py, each with the solver planner's
#         kernel in the same run, and bench_gemm_fp8.py (tawac fp8 vs cuBLAS fp8)
#                                                  -> $OUT/bench*.log and $OUT/bench.json
# tune:   tawac tune of examples/gemm.mlir (1024^3 .. 8192^3) and examples/attention.mlir
#         (d128, 1k .. 16k), then bench_gemm.py and bench_attention.py with the tables
#         (--tuned: the tuned configuration next to the default, same run)
#                                                  -> $OUT/*.tune.json, $OUT/tune*.log
# launch: benchmarks/bench_launch.py (host time per launch vs Triton and torch)
#                                                  -> $OUT/launch.log
# The solver's answers are read from .solver-cache when it was carried (it is filled by
# any run here with TAWAC_CACHE_DIR=.solver-cache): a miss solves on the spot.
# A short summary is printed last.  Exit status: non-zero if a selected part failed.
set -uo pipefail
cd "$(dirname "$0")/.."

part="${1:-all}"
case "$part" in
  tests | solver | bench | tune | launch | all) ;;
  *)
    echo "usage: scripts/gpu.sh [tests|solver|bench|tune|launch|all]" >&2
    exit 2
    ;;
esac

# shellcheck source=scripts/gpu_env.sh
source scripts/gpu_env.sh
# Test workers (pytest-xdist): the compiles run in parallel, the kernels share the GPU.
workers="${TAWAC_TEST_WORKERS:-4}"
python3 -c 'import torch, xdsl; print("torch", torch.__version__, "| xdsl", xdsl.__version__)'

tests_status="skipped"
tests_detail=""
if [ "$part" = tests ] || [ "$part" = all ]; then
  echo "== gpu tests"
  python3 -m pytest -m gpu -q -n "$workers" tests 2>&1 | tee "$logdir/gpu-tests.log"
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
  TAWAC_SCHEDULE=solver python3 -m pytest -m gpu -q -n "$workers" tests 2>&1 | tee "$logdir/gpu-tests-solver.log"
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
  python3 benchmarks/bench_attention.py --alt schedule=solver 2>&1 \
    | tee "$logdir/bench-attention.log"
  rc_att=${PIPESTATUS[0]}
  [ "$rc" = 0 ] && rc=$rc_att
  python3 benchmarks/bench_gemm_fp8.py 2>&1 | tee "$logdir/bench-fp8.log"
  rc_fp8=${PIPESTATUS[0]}
  [ "$rc" = 0 ] && rc=$rc_fp8
  case $rc in
    0) bench_status="ok" ;;
    *) bench_status="FAILED($rc)" ;;
  esac
fi

tune_status="skipped"
if [ "$part" = tune ] || [ "$part" = all ]; then
  echo "== tune"
  tune_status="ok"
  python3 -m tawac.tools.cli tune examples/gemm.mlir --table "$logdir/gemm.tune.json" \
    --size M=1024,N=1024,K=1024 --size M=2048,N=2048,K=2048 \
    --size M=4096,N=4096,K=4096 --size M=8192,N=8192,K=8192 \
    --space BLOCK_M=64,128 --space BLOCK_N=64,128,256 --space BLOCK_K=64,128 \
    --space stages=0,4 2>&1 | tee "$logdir/tune-gemm.log" || tune_status="FAILED"
  python3 -m tawac.tools.cli tune examples/attention.mlir --table "$logdir/attention.tune.json" \
    --size B=32,H=16,S=1024,D=128 --size B=8,H=16,S=4096,D=128 \
    --size B=2,H=16,S=16384,D=128 --space BLOCK_N=128,160,192 2>&1 \
    | tee "$logdir/tune-attention.log" || tune_status="FAILED"
  python3 benchmarks/bench_gemm.py --no-triton --tuned "$logdir/gemm.tune.json" \
    --shapes 1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,8192x8192x1024,16384x16384x4096,4096x14336x4096 \
    2>&1 | tee "$logdir/tune-bench-gemm.log" || tune_status="FAILED"
  python3 benchmarks/bench_attention.py --tuned "$logdir" 2>&1 \
    | tee "$logdir/tune-bench-attention.log" || tune_status="FAILED"
fi

launch_status="skipped"
if [ "$part" = launch ] || [ "$part" = all ]; then
  echo "== launch"
  python3 benchmarks/bench_launch.py 2>&1 | tee "$logdir/launch.log" && launch_status="ok" \
    || launch_status="FAILED"
fi

echo
echo "== summary"
printf '%-6s %-12s %s\n' part status detail
printf '%-6s %-12s %s\n' tests "$tests_status" "$tests_detail"
printf '%-6s %-12s %s\n' solver "$solver_status" "$solver_detail"
printf '%-6s %-12s %s\n' bench "$bench_status" "logs in $logdir"
printf '%-6s %-12s %s\n' tune "$tune_status" "tables in $logdir"
printf '%-6s %-12s %s\n' launch "$launch_status" ""
if [ -f "$logdir/bench.log" ] && [ "$bench_status" != skipped ]; then
  # The benchmark table (without the traceback of a failed compile, if any).
  sed -n '/^bf16 GEMM/,$p' "$logdir/bench.log"
  sed -n '/^bf16 attention/,$p' "$logdir/bench-attention.log"
fi

if [ "$tune_status" != skipped ]; then
  sed -n '/^bf16 GEMM/,$p' "$logdir/tune-bench-gemm.log"
  sed -n '/^bf16 attention/,$p' "$logdir/tune-bench-attention.log"
fi
[ "$launch_status" != skipped ] && tail -n 12 "$logdir/launch.log"

case "$tests_status/$solver_status/$bench_status/$tune_status/$launch_status" in
  *FAILED*) exit 1 ;;
esac
exit 0
