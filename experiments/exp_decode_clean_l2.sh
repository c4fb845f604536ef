#!/usr/bin/env bash
# Issue 22: the decode GEMMs (tawac.torch with the shipped table against cuBLAS) timed
# with the L2 emptied dirty (do_bench's memset: the call writes back ~50 MB) and clean (a
# 256 MB read first), same machine, one after the other.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
for l2 in ${L2S:-dirty clean}; do
  timeout 280 python3 benchmarks/bench_gemm_shapes.py --configs 64x128x64 --rounds 5 --l2 $l2 > $OUT/decode-$l2.log 2>&1
  cat $OUT/decode-$l2.log | tail -20
done
