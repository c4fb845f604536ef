#!/usr/bin/env bash
# Issue 23: the decode attention shapes (rows 1/4/16 x batches 1/8/32 x 8k-128k
# keys x 4 or 8 K/V heads) through the shipped table against SDPA's backends with a
# clean L2 (bench_attention_decode.py --l2 clean), the KV read rate of each (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
timeout 560 python3 benchmarks/bench_attention_decode.py --configs 64s16 --table --rounds 3 \
  --l2 ${L2:-clean} > $OUT/decode-attention-all-${L2:-clean}.log 2>&1
grep -v "^#   \|Warning\|return sdpa" $OUT/decode-attention-all-${L2:-clean}.log | tail -60
