#!/usr/bin/env bash
# Issue 20: every iteration stamped in a causal run small enough for the trace buffers to
# keep each SM's first tiles (B=1: 512 tiles), to see where in the first tile the second
# warp group takes its lead (scripts/phase_by_tile.py --within).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
for e in 1 8; do
  timeout 120 python3 -m tawac.cli run tests/data/attention_causal_d64_bn64.mlir --size B=1,H=16,S=4096,D=64 \
    --schedule heuristic --trace-every $e --trace-out /tmp/c$e.json > /tmp/c$e.log 2>&1 || tail -3 /tmp/c$e.log
  echo "== every $e"; python3 scripts/phase_by_tile.py /tmp/c$e.json --tiles 4 --within 8
done
