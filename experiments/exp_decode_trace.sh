#!/usr/bin/env bash
# Issue 23: where a small decode step's time goes (B=1, 4 K/V heads, 32k keys, 1 or 16
# query rows): the kernel's time untraced, then the spans across the SMs of the
# epilogue, the split tile's ticket (arrive) and the last program's combine.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
for rows in 1; do for s in 16 32; do
  echo "== rows $rows split $s"
  size=B=1,H=32,L=$rows,HK=4,S=32768,D=128
  timeout 120 python3 -m tawac.tools.cli run examples/attention_decode.mlir --size $size --split-k $s 2>&1 | grep time_ms
  timeout 120 python3 -m tawac.tools.cli run examples/attention_decode.mlir --size $size --split-k $s --trace-every 1 --trace-out /tmp/t.json >/dev/null 2>&1
  python3 experiments/trace_spans.py /tmp/t.json --tracks 0 --event epilogue --event arrive --event combine
done; done
