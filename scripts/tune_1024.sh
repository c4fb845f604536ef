#!/usr/bin/env bash
# Issue 22: the tile-aligned entry of bucket 1024^3 (the ragged 1000^3 has its own), then
# both sizes through tawac.torch with the table against cuBLAS, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
timeout 300 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=1024,N=1024,K=1024 \
  --space BLOCK_M=64,128 --space BLOCK_N=64,128 --space BLOCK_K=64,128 2>&1 | grep -E "best|table:" | tail -3
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 200 python3 benchmarks/bench_gemm_shapes.py --shapes 1000x1000x1000,1024x1024x1024 \
  --configs 64x128x128,128x128x64 --rounds 7 2>&1 | tail -4
