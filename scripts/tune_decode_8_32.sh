#!/usr/bin/env bash
# Issue 22: the decode rows the table had no bucket for (M = 8 and 32 took the nearest,
# M = 16's, entry: 32 x 4096 x 4096 at 0.89x cuBLAS) tuned as the other decode buckets
# were (clean L2, 64-row tiles, split-K 1/2/4), then the 24 decode shapes
# (M in 1, 8, 16, 32, 64, 128) through tawac.torch against cuBLAS under both flushes.
# The updated table is copied to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
nk_all="N=4096,K=4096 N=14336,K=4096 N=4096,K=14336 N=8192,K=8192"
sizes=()
for m in ${MS:-8 32}; do for nk in $nk_all; do sizes+=(--size "M=$m,$nk"); done; done
timeout 330 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" --l2 clean --rep-ms 50 \
  --space BLOCK_M=64 --space BLOCK_N=32,64,128 --space BLOCK_K=128 \
  --space stages=4,6 --space split_k=1,2,4 2>&1 | grep -E "^table|error|Error" | tail -5
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
for l2 in dirty clean; do
  timeout 120 python3 benchmarks/bench_gemm_shapes.py --ms 1,8,16,32,64,128 --configs 64x64x128/d6 \
    --rounds 5 --l2 $l2 > $OUT/decode-$l2.log 2>&1
  tail -1 $OUT/decode-$l2.log
done
