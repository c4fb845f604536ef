#!/usr/bin/env bash
# End of the 2026-11-27 seventh session: the GPU suite, then the tutorial's attention
# from Python (through its tuning table, and without it) against Triton, causal and
# not, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests 2>&1 | tail -4
for c in "--causal" ""; do
  timeout 170 python3 benchmarks/bench_triton_attention.py $c --rounds 5 \
    --shapes 4x32x1024,4x32x2048,4x32x4096,2x32x8192,1x32x16384 2>&1 | tail -7
done
