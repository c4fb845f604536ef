#!/usr/bin/env bash
# Issue 20: one SM's tracks (every 8th iteration stamped) of the causal and non-causal d64
# 128x64 heuristic kernels, to see where in a tile the consumer warp groups' phase is set.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
run() {  # name size source options...
  local name=$1 size=$2; shift 2
  timeout 120 python3 -m tawac.cli run "$@" --size $size --trace-out /tmp/$name.json > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  timeout 60 python3 scripts/trace_excerpt.py /tmp/$name.json -o $OUT/$name.trace.json
}
for e in ${EVERY:-1 8}; do
run causal_heur_e$e B=8,H=16,S=4096,D=64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic --trace-every $e
run d64_heur_e$e B=4,H=16,S=4096,D=64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1 --trace-every $e
done
ls -la $OUT
