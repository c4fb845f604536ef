#!/usr/bin/env bash
# Issue 23: `overlap_epilogue` (each tile's epilogue under the next tile's first MMA)
# against the default and the shipped table, the four prefill attention examples at the
# benchmark's shapes, same run, round-robin medians (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # example head-dim [--causal]
  timeout 140 python3 experiments/exp_attention_configs.py examples/$1 --head-dim $2 ${3:-} \
    --rounds ${ROUNDS:-7} --config table=table --config default= \
    --config overlap=overlap_epilogue=1 ${EXTRA:-} 2>&1 | grep -v "Warn\|^tuned"
}
run attention.mlir 128
run attention_d64.mlir 64
run attention_causal.mlir 128 --causal
run attention_causal_d64.mlir 64 --causal
