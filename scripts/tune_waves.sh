#!/usr/bin/env bash
# Issue 22: the tile order knobs (persistence, group size, tile prefetch) for the
# wave-quantized sizes the tile sets did not help, then tawac.torch with the table
# against cuBLAS on them, same run (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
timeout 300 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=3000,N=5000,K=2000 \
  --size M=5120,N=5120,K=8192 --space BLOCK_N=256 --space persistent=true,false \
  --space group-m=4,8,16 --space tile-prefetch=true,false 2>&1 | grep -E "best|table:" | tail -4
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
timeout 200 python3 benchmarks/bench_gemm_shapes.py --shapes 3000x5000x2000,5120x5120x8192 \
  --configs 128x256x64 --rounds 5 2>&1 | tail -4
