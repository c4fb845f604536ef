#!/usr/bin/env bash
# Issue 20: does the tile order put the heuristic's attention loops in a convoy? Loop
# cycles and the consumer warp groups' phase under other orders (group_m, persistent).
set -uo pipefail
. experiments/phase_env.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
D64=B=4,H=16,S=4096,D=64
C64=B=8,H=16,S=4096,D=64
for o in "--group-m 1" "--group-m 64" "--no-persistent"; do
  phased "d64_heur$o" $D64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1 $o
  phased "causal_heur$o" $C64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic $o
done
timeout 300 python3 benchmarks/bench_corpus.py --only attention_d64_128x64,attention_bias_d128_128x64,attention_causal_d64_128x64 \
  --planners heuristic,heuristic:group-m=1,heuristic:group-m=64,heuristic:persistent=0 --trace-every 8 --rounds 5 \
  --json $OUT/order.json > $OUT/order.log 2>&1
grep "^| attention" $OUT/order.log | awk -F'|' '{print $2, "|", $4, $10, $11, "|", $14, $20, $21, "|", $24, $30, $31, "|", $34, $40, $41}'
