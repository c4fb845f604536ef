#!/usr/bin/env bash
# Issue 23: tile times of causal d128 at 1k keys with and without overlap_epilogue, two
# builds each alternately (tile_overhead.py with --iterations 0: the whole tile). .whl carried.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
for o in "" "--overlap-epilogue" "" "--overlap-epilogue"; do
  timeout 120 python3 -m tawac.tools.cli run examples/attention_causal.mlir --size B=32,H=16,S=1024,D=128 --no-check --trace-every 2 --trace-out /tmp/c.json $o > /tmp/c.log 2>&1 || tail -3 /tmp/c.log
  echo "== causal d128 1k $o"
  python3 experiments/tile_overhead.py /tmp/c.json --iterations 0 --every 2 | grep -E "tile |epilogue"
done
