#!/usr/bin/env bash
# Issue 20 experiments on the GPU machine (run from the repository root, .whl carried):
# the measured-vs-predicted trace of the attention example (every iteration stamped) and
# the worst-modelled loops under variations that isolate a cause. Results to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
A=gemm_bf16_128x128,gemm_scheduled_bf16
PA=heuristic,heuristic:persistent=false,heuristic:mma-depth=1,heuristic:persistent=false:mma-depth=1
B=gemm_two_accumulators,gemm_two_accumulators_shared_a
PB=heuristic,heuristic:coarse-pipeline=false,heuristic:stages=2,heuristic:persistent=false
timeout 150 python3 experiments/prefill_corpus.py --only $A --planners $PA --trace-every 8 --cubin -j 16 | tail -2
timeout 150 python3 experiments/prefill_corpus.py --only $B --planners $PB --trace-every 8 --cubin -j 16 | tail -2
timeout 60 python3 -m tawac.tools.cli run examples/attention.mlir --size B=4,H=16,S=4096,D=128 --trace-every 1 --trace-out /tmp/att.json 2>&1 | tail -2
timeout 60 python3 experiments/trace_excerpt.py /tmp/att.json -o $OUT/attention.trace.json
timeout 150 python3 benchmarks/bench_corpus.py --only $A --planners $PA --trace-every 8 --rounds 3 --json $OUT/expA.json > $OUT/expA.log 2>&1
timeout 150 python3 benchmarks/bench_corpus.py --only $B --planners $PB --trace-every 8 --rounds 3 --json $OUT/expB.json > $OUT/expB.log 2>&1
grep "^|" $OUT/expA.log $OUT/expB.log | cut -c1-400
