#!/usr/bin/env bash
# Issue 21: the tutorial attention's .ttir at N_CTX 4096 built not persistent, without the
# Q prefetch and with the epilogue from registers (the knobs that gave d128 prefill 4-10%
# at 16k keys, docs/perf.md 2026-11-27 second part), against Triton and the default
# build in the same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
for c in "" "--causal"; do
  timeout 280 python3 benchmarks/bench_triton_attention.py $c --rounds 7 --shapes 4x32x4096 \
    --alt auto:persistent=false --alt auto:persistent=false:tile-prefetch=false:tma-store=false \
    --alt auto:tile-prefetch=false:tma-store=false 2>&1 | tail -3
done
