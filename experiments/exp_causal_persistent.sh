#!/usr/bin/env bash
# Issue 21: persistent against plain grid over the causal programs, same run (.whl carried).
#   1. the tutorial's causal attention from Python at 1k-16k: the default build against
#      persistent=false (and chain-loops off, plain grid);
#   2. the four tile examples (bench_attention.py's 12 shapes) against --alt persistent=0.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 280 python3 benchmarks/bench_triton_attention.py --causal --rounds 5 \
  --shapes ${SHAPES:-4x32x1024,4x32x2048,4x32x4096,2x32x8192,1x32x16384} \
  --triton-alt persistent=false --triton-alt persistent=false:chain-loops=false 2>&1 | tail -9
[ -n "${TUTORIAL_ONLY:-}" ] && exit 0
timeout 300 python3 benchmarks/bench_attention.py --repeat 5 --alt persistent=0 2>&1 | tail -16
