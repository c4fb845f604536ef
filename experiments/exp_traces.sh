#!/usr/bin/env bash
# Issue 20: every-iteration traces of the worst-modelled attention loops (one SM kept each).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # name source schedule size defines...
  local name=$1 src=$2 sched=$3 size=$4; shift 4
  timeout 90 python3 -m tawac.tools.cli run $src --size $size --schedule $sched --trace-every 1 --trace-out /tmp/$name.json "$@" 2>&1 | tail -1
  timeout 60 python3 experiments/trace_excerpt.py /tmp/$name.json -o $OUT/$name.trace.json
}
run bias128x64_solver tests/data/attention_bias.mlir solver B=4,H=16,S=4096,D=128 -D BLOCK_N=64
run d128_128x64_solver examples/attention.mlir solver B=4,H=16,S=4096,D=128 -D BLOCK_M=128 -D BLOCK_N=64
run d64_128x128_heuristic examples/attention_d64.mlir heuristic B=4,H=16,S=4096,D=64 -D BLOCK_M=128 -D BLOCK_N=128
