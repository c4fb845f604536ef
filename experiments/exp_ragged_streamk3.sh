#!/usr/bin/env bash
# Issue 22: stream-K by 3 for the ragged sizes whose last wave is about two thirds full
# (3000x5000x2000: 480 tiles of 128x256, 84 in the last wave: 3 ways gives 252 pieces,
# two rounds of a third of a tile), against the table and cuBLAS (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
timeout 400 python3 benchmarks/bench_gemm_shapes.py --rounds 5 \
  --shapes 3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,6144x3072x4096 \
  --configs 128x256x64,128x256x64/k2,128x256x64/k3,128x256x64/k4,128x192x64/k3 2>&1 | tail -9
