#!/usr/bin/env bash
# Issue 23: is the persistent attention kernel's loss at 16k keys its tile order? The
# grouped order (8 query blocks x every head) keeps 16-32 heads' K/V streaming at once:
# 128 MB at 16k keys, more than the L2; a plain grid runs the query blocks of one head
# together. The 12 prefill shapes with the whole x axis as one group (x fastest), then
# the 16k entries' launch knobs with each order (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 330 python3 benchmarks/bench_attention.py --markdown --repeat 3 --alt group_m=4096 2>&1 | tail -16
for d in 128 64; do
  src=examples/attention.mlir; bn=160; h=16
  if [ $d = 64 ]; then src=examples/attention_d64.mlir; bn=128; h=32; fi
  timeout 200 python3 -m tawac.tools.cli tune $src --table /tmp/scratch$d.tune.json \
    --size B=2,H=$h,S=16384,D=$d -D BLOCK_N=$bn --space persistent=true,false \
    --space group_m=8,4096 --space tile_prefetch=false --space tma_store=false --rounds 5 \
    --rep-ms 200 2>&1 | grep -E "^│ +[0-9]|^│ +│" | head -12
done
