#!/usr/bin/env bash
# Issue 23: batch-1 one-row decode with splits that fill the 132 SMs: 4 K/V heads x 33
# splits = 132 CTAs (the table runs 32: 128 CTAs); 8 K/V heads x 33 = 264 (against 16:
# 128). Clean L2, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
timeout 500 python3 benchmarks/bench_attention_decode.py --rows 1 --batches 1 --keys 32768,131072 \
  --kv-heads 4,8 --configs ${CONFIGS:-64s32n64d2,64s33n64d2,64s16,64s33} \
  --table --rounds 5 --l2 clean 2>&1 | grep -v "Warning\|return sdpa" | tail -14
