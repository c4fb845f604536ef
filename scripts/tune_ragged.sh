#!/usr/bin/env bash
# Issue 22: the tuning table's buckets for ragged and wave-quantized GEMM sizes, then
# tawac.torch with the table against cuBLAS on them (same run), on the GPU machine (.whl
# carried). The updated table and the table's log go to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
SHAPES="3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,6144x3072x4096"
timeout 200 python3 benchmarks/bench_gemm_shapes.py --shapes $SHAPES --configs 128x256x64 --rounds 5 2>&1 | tail -8
sizes=()
for s in ${SHAPES//,/ }; do IFS=x read -r m n k <<< "$s"; sizes+=(--size "M=$m,N=$n,K=$k"); done
timeout 330 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=128 --space BLOCK_N=128,256 --space BLOCK_K=64,128 --space stages=3,4,5 \
  --space cluster=1x1,2x1 2>&1 | grep -E "best|table:|M=[0-9]+,N" | tail -12
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 200 python3 benchmarks/bench_gemm_shapes.py --shapes $SHAPES --configs 128x256x64 --rounds 5 2>&1 | tail -8
