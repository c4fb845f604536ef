#!/usr/bin/env bash
# Issue 21: which part of the persistent kernel costs the causal tutorial 5-6% at 8k and
# 16k keys: the tile loop itself, the next tile's Q prefetch, or the staged epilogue.
# tawac.triton builds against Triton, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 benchmarks/bench_triton_attention.py --causal --rounds 7 \
  --shapes ${SHAPES:-4x32x2048,2x32x8192,1x32x16384} \
  --triton-alt persistent=false --triton-alt tile-prefetch=false \
  --triton-alt tma-store=false --triton-alt tile-prefetch=false:tma-store=false 2>&1 | tail -5
