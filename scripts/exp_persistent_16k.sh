#!/usr/bin/env bash
# Issue 23: is the persistent loop's loss at 16k keys stable? The four prefill examples at
# 16k keys, persistent or not (other knobs as the tables), timed twice in one run with
# longer timing windows; the tables are not touched (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
ab() {  # example size [--space ...]
  local ex=$1 size=$2; shift 2
  for pass in 1 2; do
    timeout 120 python3 -m tawac.cli tune examples/$ex --size $size --rep-ms 200 --table /tmp/t-$ex.json \
      --space persistent=0,1 "$@" 2>&1 | grep -E "^│" | awk -v ex="$ex" -v p=$pass '{print ex, "pass", p, $0}'
  done
}
ab attention.mlir B=2,H=16,S=16384,D=128 --space BLOCK_N=160
ab attention_causal.mlir B=2,H=16,S=16384,D=128 --space skip_rescale=1
ab attention_d64.mlir B=2,H=32,S=16384,D=64 --space BLOCK_N=128
ab attention_causal_d64.mlir B=2,H=32,S=16384,D=64 --space skip_rescale=1
ab attention_causal.mlir B=8,H=16,S=4096,D=128 --space skip_rescale=1
