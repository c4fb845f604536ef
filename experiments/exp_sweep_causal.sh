#!/usr/bin/env bash
# Issue 20: the GPU sweep's causal d128 128x64 attention kernel (not a corpus program),
# whose auto pick moved to the heuristic under the 2026-11-27 model rules: its two builds
# timed alternately (.whl carried; tawac run, 3 rounds each).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD:$PWD/tests PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
python3 -c "
from test_gpu_attention_sweep import instantiate
open('/tmp/sw.mlir', 'w').write(instantiate(128, 64, 128, True))"
for r in 1 2 3; do
  for s in heuristic solver; do
    printf '%s ' $s
    timeout 120 python3 -m tawac.tools.cli run /tmp/sw.mlir --size B=4,H=16,S=4096,D=128 \
      --schedule $s --rep-ms 300 2>&1 | grep -iE "time|tflops" | tr "\n" " "; echo
  done
done
