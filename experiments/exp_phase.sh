#!/usr/bin/env bash
# Issue 20: how far apart the two consumer warp groups run (experiments/phase_offsets.py) in the
# loops the model misprices most, against their twins it prices well.
set -uo pipefail
. experiments/phase_env.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
D64=B=4,H=16,S=4096,D=64
C64=B=8,H=16,S=4096,D=64
D128=B=4,H=16,S=4096,D=128
phased causal_heur $C64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic
phased causal_solv $C64 tests/data/attention_causal_d64_bn64.mlir --schedule solver
phased d64_heur $D64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1
phased d64_solv $D64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule solver --widen 1
phased bias_heur $D128 tests/data/attention_bias.mlir -D BLOCK_N=64 --schedule heuristic
phased bias_solv $D128 tests/data/attention_bias.mlir -D BLOCK_N=64 --schedule solver
