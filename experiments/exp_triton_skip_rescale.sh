#!/usr/bin/env bash
# Issue 21: the tutorial attention's .ttir (N_CTX 4096) with skip_rescale, causal and not,
# against Triton and the default build, same run (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
for c in "" --causal; do
  timeout 250 python3 benchmarks/bench_triton_attention.py $c --rounds 7 --shapes 4x32x4096 \
    --alt heuristic:skip-rescale=1 --alt auto:skip-rescale=1 2>&1 | tail -3
done
