#!/usr/bin/env bash
# Issue 22: the tuning table's decode buckets for examples/gemm.mlir (M 1 to 128 x the
# issue's four (N, K)), tiles from 64x32 to 128x256, on the GPU machine (.whl carried).
# The updated table is copied to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
sizes=()
for m in 1 16 64 128; do
  for nk in "N=4096,K=4096" "N=14336,K=4096" "N=4096,K=14336" "N=8192,K=8192"; do
    sizes+=(--size "M=$m,$nk")
  done
done
timeout 540 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=64,128 --space BLOCK_N=32,64,128,256 --space BLOCK_K=64,128 2>&1 | tail -25
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
