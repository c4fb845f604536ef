#!/usr/bin/env bash
# Issue 22: longer K steps (BLOCK_K 256) for the decode buckets still below cuBLAS
# (small M; 4096 x 4096 and 4096 x 14336), on the GPU machine (.whl carried). The updated
# table is copied to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
sizes=()
for m in 1 16; do
  for nk in "N=4096,K=4096" "N=4096,K=14336"; do
    sizes+=(--size "M=$m,$nk")
  done
done
timeout 540 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=64 --space BLOCK_N=32,64,128 --space BLOCK_K=128,256 --space stages=3,4,6,8 2>&1 \
  | grep -E "best|table:|M=[0-9]+,N" | tail -20
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
