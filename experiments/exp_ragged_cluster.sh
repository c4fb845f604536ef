#!/usr/bin/env bash
# Issue 22: cuBLAS runs 1000^3 as 128x64 tiles, 8 stages, cluster 1x2, and
# 3000x5000x2000 with cluster 1x2 (experiments/cublas_kernels.py). The same launch shapes in
# tawac's GEMM, tuned into a scratch table (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
cp examples/gemm.tune.json /tmp/scratch.tune.json
timeout 280 python3 -m tawac.tools.cli tune examples/gemm.mlir --table /tmp/scratch.tune.json \
  --size M=1000,N=1000,K=1000 --space BLOCK_M=128 --space BLOCK_N=64,128 --space BLOCK_K=64 \
  --space stages=5,8 --space cluster=1x1,2x1,1x2 --rounds 5 2>&1 | grep -E "^│ *[0-9]|default|table:" | head -30
timeout 250 python3 -m tawac.tools.cli tune examples/gemm.mlir --table /tmp/scratch.tune.json \
  --size M=3000,N=5000,K=2000 --space BLOCK_M=128 --space BLOCK_N=256 --space BLOCK_K=64 \
  --space stages=3,4 --space cluster=1x1,2x1,1x2 --rounds 5 2>&1 | grep -E "^│ *[0-9]|default|table:" | head -20
