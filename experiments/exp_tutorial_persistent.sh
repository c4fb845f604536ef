#!/usr/bin/env bash
# Issue 21: the tutorial's attention (non-causal, then causal) from Python, the default
# (persistent) build against persistent=false at 1k-16k, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
for c in "" "--causal"; do
  timeout 280 python3 benchmarks/bench_triton_attention.py $c --rounds 5 \
    --shapes ${SHAPES:-4x32x1024,4x32x2048,4x32x4096,2x32x8192,1x32x16384} \
    --triton-alt persistent=false 2>&1 | tail -7
done
