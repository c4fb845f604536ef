#!/usr/bin/env bash
# End of the 2026-11-27 sixth session: the GPU suite, then the ragged and misaligned
# GEMM sizes through tawac.torch (the tables, the L2 promotion rule) against cuBLAS,
# same run. On the GPU machine (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests 2>&1 | tail -5
SHAPES=${SHAPES:-3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,3000x3000x3000,5000x5000x5000,4000x6000x3000,4096x6144x3000,3072x7168x2048,6144x3072x4096,7168x2048x4096,2000x8000x3000}
timeout 200 python3 benchmarks/bench_gemm_shapes.py --rounds 5 --shapes $SHAPES \
  --configs 128x256x64 2>&1 | tail -16
