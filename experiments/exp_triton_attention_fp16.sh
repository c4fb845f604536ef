#!/usr/bin/env bash
# Issue 21: the Triton tutorial's attention against tawac's tile example in both bf16 and
# fp16 (the Triton-source kernels' own type), not causal and causal, same run.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 280 python3 benchmarks/bench_triton_attention.py --rounds 5 > $OUT/triton-attention.log 2>&1; tail -7 $OUT/triton-attention.log
timeout 280 python3 benchmarks/bench_triton_attention.py --rounds 5 --causal > $OUT/triton-attention-causal.log 2>&1; tail -7 $OUT/triton-attention-causal.log
