#!/usr/bin/env bash
# Issue 23: where a small decode step's time goes (B=1, 8 K/V heads, 32k keys): the
# kernel's time untraced, then every track's span (first to last stamp) across the SMs.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
for s in 16 32; do
  echo "== split $s"
  timeout 120 python3 -m tawac.cli run examples/attention_decode.mlir -D GROUP=8 --size B=1,H=32,L=1,HK=4,S=32768,D=128 --split-k $s 2>&1 | grep -i "ms\|us" | tail -3
  timeout 120 python3 -m tawac.cli run examples/attention_decode.mlir -D GROUP=8 --size B=1,H=32,L=1,HK=4,S=32768,D=128 --split-k $s --trace-every 1 --trace-out /tmp/t$s.json 2>&1 | grep -i "ms\|us" | tail -3
  python3 scripts/trace_spans.py /tmp/t$s.json --tracks 0 --event epilogue --event "warp group" --event "get q"
done
