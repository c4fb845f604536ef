#!/usr/bin/env bash
# Issue 23: what makes the persistent build slower at 16k keys? The non-causal d128 and d64
# examples at 16k keys, persistent or not, with and without the next tile's Q prefetched,
# and with the epilogue stores from registers (no TMA store), twice in one run; the tables
# are not touched (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
ab() {  # example size [--space ...]
  local ex=$1 size=$2; shift 2
  for pass in 1 2; do
    timeout 150 python3 -m tawac.cli tune examples/$ex --size $size --rep-ms 200 --table /tmp/t-$ex.json \
      "$@" 2>&1 | grep -E "^│" | awk -v ex="$ex" -v p=$pass '{print ex, "pass", p, $0}'
  done
}
ab attention.mlir B=2,H=16,S=16384,D=128 --space BLOCK_N=160 --space persistent=0,1 \
  --space tile_prefetch=0,1 --space tma_store=0,1
ab attention_d64.mlir B=2,H=32,S=16384,D=64 --space BLOCK_N=128 --space persistent=0,1 \
  --space tile_prefetch=0,1 --space tma_store=0,1
