#!/usr/bin/env bash
# Issue 22: the M = 128 decode shapes run two 64-row tiles over every column block, so
# each B tile leaves L2 twice. A 2x1 cluster pairs the two row tiles and multicasts B
# once to both. Tuned with a clean L2 over the table's tiles x cluster 1x1 / 2x1, then
# the M = 128 rows through tawac.torch against cuBLAS under both flushes. The updated
# table goes to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
SHAPES=${SHAPES:-128x4096x14336,128x14336x4096,128x8192x8192,128x4096x4096}
sizes=()
for s in ${SHAPES//,/ }; do IFS=x read -r m n k <<< "$s"; sizes+=(--size "M=$m,N=$n,K=$k"); done
timeout 330 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" --l2 clean \
  --rep-ms 50 --rounds 5 --space BLOCK_M=64 --space BLOCK_N=64,128 --space BLOCK_K=128 \
  --space stages=4,6 --space split_k=1,2 --space cluster=1x1,2x1 2>&1 \
  | grep -E "^table|compiled|M=[0-9]+,N|│ +[1-3] │" | tail -20
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
for l2 in clean dirty; do
  timeout 80 python3 benchmarks/bench_gemm_shapes.py --ms 128 --configs 64x64x128/d6 --rounds 5 \
    --l2 $l2 2>&1 | tail -7
done
