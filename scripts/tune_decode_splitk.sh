#!/usr/bin/env bash
# Issue 22: the decode buckets of examples/gemm.tune.json (M 1 and 16 x the four
# (N, K)) tuned again with split-K in the space (64-row tiles, 32-128 columns, 128-deep
# steps, rings of 4 or 6, split_k 1, 2 or 4), on the GPU machine (.whl carried). The
# updated table is copied to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
sizes=()
for m in ${MS:-1 16}; do
  for nk in "N=4096,K=4096" "N=14336,K=4096" "N=4096,K=14336" "N=8192,K=8192"; do
    sizes+=(--size "M=$m,$nk")
  done
done
timeout 560 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=64 --space BLOCK_N=32,64,128 --space BLOCK_K=128 \
  --space stages=4,6 --space split_k=1,2,4 2>&1 | tail -30
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
