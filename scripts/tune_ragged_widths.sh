#!/usr/bin/env bash
# Issue 22: the ragged and wave-quantized sizes tuned with tile widths between the powers
# of two (BLOCK_N 160, 192, 224: a tile count nearer a whole number of waves on 132 SMs)
# and split-K by 2 (more programs for the small ones), then tawac.torch with the table
# against cuBLAS on them, same run (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
SHAPES=${SHAPES:-3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,6144x3072x4096}
sizes=()
for s in ${SHAPES//,/ }; do IFS=x read -r m n k <<< "$s"; sizes+=(--size "M=$m,N=$n,K=$k"); done
timeout 400 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=128 --space BLOCK_N=128,160,192,224,256 --space BLOCK_K=64 \
  --space split_k=1,2 2>&1 | grep -E "^[A-Za-z]|M=[0-9]+,N|│ +1 │" | tail -30
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 150 python3 benchmarks/bench_gemm_shapes.py --shapes $SHAPES --configs 128x256x64 --rounds 5 2>&1 | tail -8
