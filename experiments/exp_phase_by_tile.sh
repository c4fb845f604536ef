#!/usr/bin/env bash
# Issue 20: from the first tile on, how far ahead the second consumer warp group runs in
# the causal and non-causal d64 128x64 heuristic kernels (every 8th iteration stamped,
# all SMs; experiments/phase_by_tile.py).
set -uo pipefail
. experiments/phase_env.sh
run() {  # name size source options...
  traced "$@" --trace-every 8
  echo "== $1"; python3 experiments/phase_by_tile.py /tmp/$1.json --tiles 8
}
run causal B=8,H=16,S=4096,D=64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic
run noncausal B=4,H=16,S=4096,D=64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1
