#!/usr/bin/env bash
# Issue 20: from the first tile on, how far ahead the second consumer warp group runs in
# the causal and non-causal d64 128x64 heuristic kernels (every 8th iteration stamped,
# all SMs; scripts/phase_by_tile.py).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
run() {  # name size source options...
  local name=$1 size=$2; shift 2
  timeout 120 python3 -m tawac.cli run "$@" --size $size --trace-every 8 --trace-out /tmp/$name.json > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  echo "== $name"; python3 scripts/phase_by_tile.py /tmp/$name.json --tiles 8
}
run causal B=8,H=16,S=4096,D=64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic
run noncausal B=4,H=16,S=4096,D=64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1
