#!/usr/bin/env bash
# Issue 22: the ragged and wave-quantized sizes tuned with stream-K in the space (128 x
# {128, 192, 256} tiles, stream_k 0, 2 or 4: the last wave's tiles split among the SMs),
# then tawac.torch with the table against cuBLAS on them and on the large shapes (not
# slower), same run, on the GPU machine (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
SHAPES=${SHAPES:-3000x5000x2000,2304x4608x3072,5120x5120x8192,6144x3072x4096}
sizes=()
for s in ${SHAPES//,/ }; do IFS=x read -r m n k <<< "$s"; sizes+=(--size "M=$m,N=$n,K=$k"); done
timeout 400 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" \
  --space BLOCK_M=128 --space BLOCK_N=128,192,256 --space BLOCK_K=64 \
  --space stream_k=0,2,4 2>&1 | grep -E "^[A-Za-z]|M=[0-9]+,N|│ +1 │" | tail -30
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 150 python3 benchmarks/bench_gemm_shapes.py --rounds 5 \
  --shapes $SHAPES,1000x1000x1000,4096x4096x4096,8192x8192x8192,8192x4096x4096 \
  --configs 128x256x64 2>&1 | tail -11
