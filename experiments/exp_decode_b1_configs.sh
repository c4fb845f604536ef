#!/usr/bin/env bash
# Issue 23: batch-1, one-row decode attention (the shapes below 1.0x the best SDPA) with
# more splits and 64-key blocks in short rings (more CTAs and more loads in flight per SM),
# with a clean L2 (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
timeout 560 python3 benchmarks/bench_attention_decode.py --rows 1 --batches 1 --keys 32768,131072 \
  --configs 64s16,64s32,64s64,64s32n64d2,64s64n64d2,64s64n64d4,64s32n64d4 \
  --table --rounds 5 --l2 clean 2>&1 | grep -v "Warning\|return sdpa" | tail -14
