#!/usr/bin/env bash
# Issue 23: is the 16k-key gain of the launch that is not persistent, with the epilogue
# from registers, the consumer warp groups' phase? The d128 example (160-key blocks,
# heuristic schedule) both ways at B=2,H=16,S=16384: a sampled trace each (every 8th
# iteration), the loop's cycles and the two warp groups' phase (experiments/phase_offsets.py).
# Builds prefilled locally into .bench-cache (TAWAC_CACHE_DIR=$PWD/.bench-cache tawac
# compile ... --trace-every 8); carry the xdsl and immutabledict wheels and .bench-cache.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
for o in "" "--no-persistent --no-tile-prefetch --no-tma-store"; do
  name=p16k${o:+-np}
  timeout 100 python3 -m tawac.tools.cli run examples/attention.mlir -D BLOCK_N=160 --schedule heuristic \
    $o --size B=2,H=16,S=16384,D=128 --no-check --trace-every 8 --trace-out /tmp/$name.json \
    > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  grep -iE "cycles|loop|ms" /tmp/$name.log | head -4
  echo "$name ${o:-default}: $(python3 experiments/phase_offsets.py /tmp/$name.json)"
done
