#!/usr/bin/env bash
# Issue 23: prefill attention with a third K/V slot (no Q prefetch slot), and the shipped
# tuning table, each against the default build and cuDNN in the same run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 280 python3 benchmarks/bench_attention.py --markdown --alt ${ALT:-stages=3,tile-prefetch=0} 2>&1 | tail -16
timeout 280 python3 benchmarks/bench_attention.py --markdown --tuned examples 2>&1 | tail -16
