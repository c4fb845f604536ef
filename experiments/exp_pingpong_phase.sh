#!/usr/bin/env bash
# Issue 20: does the heuristic's causal d64 loop beat its non-causal twin (1286 vs 1444
# cycles) because its two consumer warp groups run out of phase? Ping-pong turns force it.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 400 python3 benchmarks/bench_corpus.py \
  --only attention_d64_128x64,attention_causal_d64_128x64,attention_d128_128x64,attention_bias_d128_128x64 \
  --planners heuristic,heuristic:pingpong=1,solver,solver:pingpong=1 --trace-every 8 --rounds 5 \
  --json $OUT/pingpong.json > $OUT/pingpong.log 2>&1
tail -14 $OUT/pingpong.log
