#!/usr/bin/env bash
# Issue 23: per-tile time of the persistent attention kernels with and without
# `overlap_epilogue` (experiments/tile_overhead.py on `tawac run --trace-every 2` traces), at
# 1k keys where the knob gains (d128) and loses (d64, causal d128). .whl carried.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # name example size iterations [options]
  local name=$1 ex=$2 size=$3 its=$4; shift 4
  timeout 120 python3 -m tawac.tools.cli run examples/$ex --size $size --no-check --trace-every 2 \
    --trace-out /tmp/$name.json "$@" > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  echo "== $name ($ex $size $*)"
  python3 experiments/tile_overhead.py /tmp/$name.json --iterations $its --every 2 | tail -3
}
for o in "" "--overlap-epilogue"; do
  run d128${o:+-ov} attention.mlir B=32,H=16,S=1024,D=128 8 $o
  run d64${o:+-ov} attention_d64.mlir B=32,H=32,S=1024,D=64 8 $o
  run c128${o:+-ov} attention_causal.mlir B=32,H=16,S=1024,D=128 4 $o
done
