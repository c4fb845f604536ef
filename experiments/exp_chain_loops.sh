#!/usr/bin/env bash
# Issue 21: the tutorial's causal attention (two key loops) with the loops chained into
# one pipeline (`coarse-pipeline`'s chain, the default) against chain-loops=false, same
# run; the Triton attention GPU tests first. On the GPU machine (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_triton_attention.py \
  tests/test_triton_unseen.py tests/test_guard_masks.py 2>&1 | tail -4
timeout 300 python3 benchmarks/bench_triton_attention.py --causal --rounds ${ROUNDS:-5} \
  --shapes ${SHAPES:-4x32x1024,4x32x2048,4x32x4096,2x32x8192} \
  --triton-alt chain-loops=false 2>&1 | tail -8
