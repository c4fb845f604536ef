#!/usr/bin/env bash
# Issue 22: the ragged and wave-quantized sizes tuned over tile shapes that divide them
# into whole waves (256 x 160 at 3000 x 5000 x 2000 is 384 tiles, 2.9 waves on 132 SMs,
# against 480 tiles, 3.6 waves, at 128 x 256), then tawac.torch with the table against
# cuBLAS on them and on the large shapes (not slower), same run, on the GPU machine
# (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
SHAPES=${SHAPES:-3000x5000x2000,2304x4608x3072,5120x5120x8192,6144x3072x4096}
SPACE=${SPACE:---space BLOCK_M=128,256 --space BLOCK_N=128,160,192 --space BLOCK_K=64 --space stream_k=0,4}
sizes=()
for s in ${SHAPES//,/ }; do IFS=x read -r m n k <<< "$s"; sizes+=(--size "M=$m,N=$n,K=$k"); done
# shellcheck disable=SC2086
timeout 420 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" --rounds 5 $SPACE \
  2>&1 | grep -E "^[A-Za-z]|M=[0-9]+,N|│ +[1-3] │" | tail -40
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 150 python3 benchmarks/bench_gemm_shapes.py --rounds 5 \
  --shapes $SHAPES,1000x1000x1000,4096x4096x4096,8192x8192x8192,8192x4096x4096 \
  --configs 128x256x64 2>&1 | tail -11
