#!/usr/bin/env bash
# Issue 20: one slice of the corpus benchmark (heuristic, solver, auto; plain and sampled
# traced builds), compiled in parallel first.   experiments/exp_corpus.sh I/N [NAME]
set -uo pipefail
part=$1; name=${2:-corpus}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
P=heuristic,solver,auto
timeout 280 python3 experiments/prefill_corpus.py --part $part --planners $P --trace-every 8 --cubin -j 16 | tail -3
timeout 300 python3 benchmarks/bench_corpus.py --part $part --planners $P --trace-every 8 --rounds 3 \
  --json $OUT/$name-${part%/*}.json > $OUT/$name-${part%/*}.log 2>&1
tail -12 $OUT/$name-${part%/*}.log
