#!/usr/bin/env bash
# Issue 20: auto and today's heuristic against the default planner of the day the issue
# was filed (bb1e243; scripts/build_baseline.sh), the 50 non-example corpus programs, one
# run (carry the xdsl and immutabledict wheels and .bench-cache with baseline-bb1e243 and
# today's builds prefilled: experiments/prefill_corpus.py --planners auto,heuristic --cubin).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 560 python3 benchmarks/bench_baseline.py --baseline .bench-cache/baseline-bb1e243 \
  --planners auto,heuristic --rounds ${ROUNDS:-5} > $OUT/baseline.log 2>&1
tail -12 $OUT/baseline.log
