#!/usr/bin/env bash
# Issue 20: every iteration stamped in a causal run small enough for the trace buffers to
# keep each SM's first tiles (B=1: 512 tiles), to see where in the first tile the second
# warp group takes its lead (experiments/phase_by_tile.py --within).
set -uo pipefail
. experiments/phase_env.sh
for e in 1 8; do
  traced c$e B=1,H=16,S=4096,D=64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic --trace-every $e
  echo "== every $e"; python3 experiments/phase_by_tile.py /tmp/c$e.json --tiles 4 --within 8
done
