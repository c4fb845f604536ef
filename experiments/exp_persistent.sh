#!/usr/bin/env bash
# Issue 23: the prefill examples persistent or not, timed twice in one run with 200 ms
# windows through `tawac tune` (the tables are not touched; .whl carried).
#   PART=16k: the four examples at 16k keys, persistent=0,1, the other knobs as the tables;
#   PART=lock: the non-causal d128 and d64 examples at 16k keys, persistent x tile_prefetch
#   x tma_store (what shared memory holds besides the K/V rings).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
ab() {  # example size [--space ...]
  local ex=$1 size=$2; shift 2
  for pass in 1 2; do
    timeout 150 python3 -m tawac.tools.cli tune examples/$ex --size $size --rep-ms 200 --table /tmp/t-$ex.json \
      "$@" 2>&1 | grep -E "^│" | awk -v ex="$ex" -v p=$pass '{print ex, "pass", p, $0}'
  done
}
D128=B=2,H=16,S=16384,D=128
D64=B=2,H=32,S=16384,D=64
case ${PART:-16k} in
16k)
  ab attention.mlir $D128 --space persistent=0,1 --space BLOCK_N=160
  ab attention_causal.mlir $D128 --space persistent=0,1 --space skip_rescale=1
  ab attention_d64.mlir $D64 --space persistent=0,1 --space BLOCK_N=128
  ab attention_causal_d64.mlir $D64 --space persistent=0,1 --space skip_rescale=1
  ab attention_causal.mlir B=8,H=16,S=4096,D=128 --space persistent=0,1 --space skip_rescale=1 ;;
lock)
  for ex in "attention.mlir $D128 --space BLOCK_N=160" "attention_d64.mlir $D64 --space BLOCK_N=128"; do
    ab $ex --space persistent=0,1 --space tile_prefetch=0,1 --space tma_store=0,1
  done ;;
esac
