#!/usr/bin/env bash
# Issue 22: is a decode GEMM bound by one CTA per SM? The read bandwidth torch's own
# kernels reach (scripts/probe_bandwidth.py), then the decode buckets tuned with plain
# (non-persistent) grids of small-ring CTAs, several per SM, next to the persistent ones
# (.whl carried). The updated table goes to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
timeout 60 python3 scripts/probe_bandwidth.py
timeout 400 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=1,N=4096,K=4096 \
  --size M=16,N=4096,K=4096 --size M=1,N=8192,K=8192 --size M=16,N=4096,K=14336 \
  --space BLOCK_M=64 --space BLOCK_N=32,64,128 --space BLOCK_K=128 \
  --space stages=2,3,4,6 --space persistent=true,false --space split_k=1,2 2>&1 \
  | grep -E "^[A-Za-z]|M=[0-9]+,N|│ +[123] │" | tail -24
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
