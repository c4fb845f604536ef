#!/usr/bin/env bash
# Issue 23: what a persistent attention kernel spends per tile outside its steady main
# loop (prologue, ramp, epilogue), at the prefill shapes weakest against cuDNN: d128
# non-causal 4k keys (32 key blocks per tile) and d64 / d128 1k (8 per tile), the
# tables' configurations, traced every 8th (4k) or 2nd (1k) iteration
# (experiments/tile_overhead.py). `tawac run` fills the inputs with zeros: the clocks run
# higher than under the benchmark's random data, so read shares, not rates. .whl carried.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
run() {  # name example size iterations every [options]
  local name=$1 ex=$2 size=$3 its=$4 every=$5; shift 5
  timeout 120 python3 -m tawac.tools.cli run examples/$ex --size $size --no-check --trace-every $every \
    --trace-out /tmp/$name.json "$@" > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  grep -E "trace_stamps" /tmp/$name.log
  echo "== $name ($ex $size $*)"
  python3 experiments/tile_overhead.py /tmp/$name.json --iterations $its --every $every
}
run d128-4k attention.mlir B=8,H=16,S=4096,D=128 32 8
run d64-1k attention_d64.mlir B=32,H=32,S=1024,D=64 8 2
run d128-1k attention.mlir B=32,H=16,S=1024,D=128 8 2 -D BLOCK_N=128 --persistent --skip-rescale
