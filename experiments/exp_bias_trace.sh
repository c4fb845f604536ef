#!/usr/bin/env bash
# Issue 20: the worst-modelled loop (attention_bias_d128_128x64 under the solver) traced at
# every iteration next to the heuristic's, and the 0.975 program re-timed with more rounds.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
for s in solver heuristic; do
  timeout 120 python3 -m tawac.tools.cli run tests/data/attention_bias.mlir --size B=4,H=16,S=4096,D=128 \
    -D BLOCK_N=64 --schedule $s --trace-every 1 --trace-out /tmp/bias_$s.json 2>&1 | tail -1
  timeout 60 python3 experiments/trace_excerpt.py /tmp/bias_$s.json -o $OUT/bias128x64_$s.trace.json
done
timeout 300 python3 benchmarks/bench_corpus.py --only gemm_two_accumulators_shared_a,gemm_two_accumulators \
  --planners heuristic,solver,auto --trace-every 8 --rounds ${ROUNDS:-11} --json $OUT/two_acc.json > $OUT/two_acc.log 2>&1
tail -8 $OUT/two_acc.log
