#!/usr/bin/env bash
# Issue 22: where the ragged sizes still under 0.97x cuBLAS spend their time
# (3000x5000x2000 at 0.87x, 1000^3 at 0.86x). A sampled trace of the table's kernel for
# 3000x5000x2000 (the epilogue's share of each tile), then `tawac tune` over the launch
# knobs the attention kernels gained from at long loops (not persistent, epilogue from
# registers, tile order), written to a scratch table (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
cp examples/gemm.tune.json /tmp/scratch.tune.json
timeout 120 python3 -m tawac.tools.cli run examples/gemm.mlir --size M=3000,N=5000,K=2000 \
  -D BLOCK_M=128 -D BLOCK_N=256 -D BLOCK_K=64 --stages 4 --trace-every 8 \
  --trace-out $OUT/gemm3000.trace.json 2>&1 | tail -3
timeout 60 python3 experiments/trace_spans.py $OUT/gemm3000.trace.json --event epilogue \
  --event "iteration loop0" --tracks 2 2>&1 | head -40
timeout 300 python3 -m tawac.tools.cli tune examples/gemm.mlir --table /tmp/scratch.tune.json \
  --size M=3000,N=5000,K=2000 -D BLOCK_M=128 -D BLOCK_N=256 -D BLOCK_K=64 --space stages=4 \
  --space persistent=true,false --space tma_store=true,false --space group_m=1,8 \
  --rounds 5 2>&1 | tail -14
timeout 200 python3 -m tawac.tools.cli tune examples/gemm.mlir --table /tmp/scratch.tune.json \
  --size M=1000,N=1000,K=1000 -D BLOCK_M=128 -D BLOCK_N=128 -D BLOCK_K=64 --space stages=5 \
  --space persistent=true,false --space tma_store=true,false \
  --rounds 5 2>&1 | tail -8
timeout 200 python3 benchmarks/bench_gemm_shapes.py --shapes 3000x5000x2000,1000x1000x1000 \
  --configs 128x256x64/d4,128x128x64/d5 --rounds 5 2>&1 | tail -5
