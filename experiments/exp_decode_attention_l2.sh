#!/usr/bin/env bash
# Issue 23: decode attention at batch 1 and 8 (one query row), tawac's shipped table and
# two splits against SDPA's backends, with do_bench's dirty flush and with a clean L2.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
for l2 in clean dirty; do
  timeout 280 python3 benchmarks/bench_attention_decode.py --rows 1 --batches ${BATCHES:-1,8} \
    --configs 64s16,64s32 --table --l2 $l2 > $OUT/decode-attention-$l2.log 2>&1
  grep -v "^#   " $OUT/decode-attention-$l2.log | tail -16
done
