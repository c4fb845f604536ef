#!/usr/bin/env bash
# Issue 21: the Triton tuning tables on the GPU: their tests, then the tutorial's causal
# attention tuned over persistent (scripts/tune_triton_attention.py); the table is copied
# to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_triton_tuning.py 2>&1 | tail -3
timeout 420 python3 scripts/tune_triton_attention.py ${TUNE_ARGS:---kinds causal} 2>&1 | tail -8
cp examples/triton/attention._attn_fwd.tune.json ${OUT:-/tmp}/ 2>/dev/null || true
