#!/usr/bin/env bash
# Issue 20: where the solver's d64 attention loop loses against the model: SASS opcode
# counts and every-iteration traces (median start and length of each stamped op within an
# iteration) of the heuristic's and the solver's schedules.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
for s in heuristic solver; do
  n=d64_128x128_$s
  python3 -m tawac.tools.cli compile examples/attention_d64.mlir --schedule $s -D BLOCK_M=128 -D BLOCK_N=128 -o /tmp/$n.cubin 2>&1 | tail -1
  cuobjdump -sass /tmp/$n.cubin > $OUT/$n.sass
  python3 -m tawac.tools.cli compile examples/attention_d64.mlir --schedule $s -D BLOCK_M=128 -D BLOCK_N=128 -o $OUT/$n.ptx 2>&1 | tail -1
  timeout 90 python3 -m tawac.tools.cli run examples/attention_d64.mlir --size B=4,H=16,S=4096,D=64 --schedule $s -D BLOCK_M=128 -D BLOCK_N=128 --trace-every 1 --trace-out /tmp/$n.json 2>&1 | tail -1
  timeout 60 python3 experiments/trace_excerpt.py /tmp/$n.json -o $OUT/$n.trace.json
  python3 experiments/iteration_profile.py $OUT/$n.trace.json
done
