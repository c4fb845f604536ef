#!/usr/bin/env bash
# Issue 22: decode GEMMs with 256-deep K steps (each row of B read 512 contiguous bytes per
# step instead of 256: fewer DRAM pages opened per byte) against the table and cuBLAS,
# with a clean and a dirty L2 (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
S=1x14336x4096,1x4096x14336,1x8192x8192,16x14336x4096,16x4096x14336,16x8192x8192,128x4096x14336,128x8192x8192
for l2 in clean dirty; do
  timeout 280 python3 benchmarks/bench_gemm_shapes.py --shapes $S --l2 $l2 --rounds 5 \
    --configs 64x64x256/d3,64x32x256/d4,64x128x256/d2,64x64x256/d3/s2 > $OUT/deepk-$l2.log 2>&1
  tail -11 $OUT/deepk-$l2.log
done
