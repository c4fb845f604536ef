#!/usr/bin/env bash
# Issue 22: 1000^3 (64 tiles of 128x128 on 132 SMs) tuned with stream-K (which splits a
# grid of fewer tiles than SMs) and small tiles, then tawac.torch with the table against
# cuBLAS on the ragged sizes, same run (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=1000,N=1000,K=1000 \
  --space BLOCK_M=64,128 --space BLOCK_N=64,128 --space BLOCK_K=64,128 \
  --space stream_k=0,2,4 2>&1 | grep -E "^[A-Za-z]|M=[0-9]+,N|│ +[123] │" | tail -8
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 150 python3 benchmarks/bench_gemm_shapes.py --rounds 5 \
  --shapes 3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,6144x3072x4096,1024x1024x1024 \
  --configs 128x256x64 2>&1 | tail -9
