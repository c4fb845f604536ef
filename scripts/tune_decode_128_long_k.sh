#!/usr/bin/env bash
# Issue 22: 128 x 4096 x 14336, the one decode shape whose B (117 MB) was read under 2.5
# TB/s with a clean L2 (2.43), tuned over plain and swap-AB tiles, split-K 1/2 (swap-AB
# with split-K is refused, so those candidates drop out), then the M = 128 rows through
# tawac.torch against cuBLAS under both flushes. The updated table goes to $OUT (.whl
# carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=128,N=4096,K=14336 --l2 clean \
  --rep-ms 50 --rounds 5 --space BLOCK_M=64,128 --space BLOCK_N=64,128 --space BLOCK_K=128 \
  --space stages=4,6 --space split_k=1,2 --space swap_ab=false,true 2>&1 \
  | grep -E "^table|compiled|│ +[1-4] │" | tail -8
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
for l2 in clean dirty; do
  timeout 60 python3 benchmarks/bench_gemm_shapes.py --ms 128 --configs 64x64x128/d6 --rounds 5 \
    --l2 $l2 2>&1 | tail -6
done
