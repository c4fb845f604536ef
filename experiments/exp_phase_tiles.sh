#!/usr/bin/env bash
# Issue 20: one SM's tracks (every 8th iteration stamped) of the causal and non-causal d64
# 128x64 heuristic kernels, to see where in a tile the consumer warp groups' phase is set.
set -uo pipefail
. experiments/phase_env.sh
run() {  # name size source options...: one SM's tracks kept in $OUT
  traced "$@"
  timeout 60 python3 experiments/trace_excerpt.py /tmp/$1.json -o $OUT/$1.trace.json
}
for e in ${EVERY:-1 8}; do
run causal_heur_e$e B=8,H=16,S=4096,D=64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic --trace-every $e
run d64_heur_e$e B=4,H=16,S=4096,D=64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1 --trace-every $e
done
ls -la $OUT
