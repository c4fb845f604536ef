#!/usr/bin/env bash
# Issue 23: tuning tables for the four prefill attention examples at the benchmark's
# sizes (32k tokens; 16 heads at d128, 32 at d64; 1k, 4k, 16k keys) over the knobs
# measured to win on some shapes (skip_rescale, exp2_fma, BLOCK_N), then
# bench_attention.py --tuned against the defaults and cuDNN in the same run. The tables
# go to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
sizes() {  # D H
  for s in 1024 4096 16384; do echo "--size B=$((32768 / s)),H=$2,S=$s,D=$1"; done
}
tune() {  # example D H [--space ...] (the causal examples declare no parameters)
  local ex=$1 d=$2 h=$3; shift 3
  timeout ${TUNE_S:-170} python3 -m tawac.tools.cli tune examples/$ex $(sizes $d $h) --rep-ms 50 "$@" \
    2>&1 | grep -E "^table|rror" | tail -3
}
KNOBS="--space skip_rescale=0,1 --space exp2_fma=0,4"
# PART=1: the d128 examples; 2: the d64 ones; 3: the benchmark (a call each: 10 minutes)
case ${PART:-1} in
1) tune attention.mlir 128 16 --space BLOCK_N=128,160 $KNOBS
   tune attention_causal.mlir 128 16 $KNOBS ;;
2) tune attention_d64.mlir 64 32 --space BLOCK_N=64,128 $KNOBS
   tune attention_causal_d64.mlir 64 32 $KNOBS ;;
# PART=4: a second pass with the planner and wider blocks in the space
4) tune attention.mlir 128 16 --space BLOCK_N=128,160,176,192 --space skip_rescale=0,1 \
     --space schedule=heuristic,solver
   tune attention_causal.mlir 128 16 --space skip_rescale=0,1 --space schedule=heuristic,solver
   tune attention_d64.mlir 64 32 --space BLOCK_M=128,192 --space BLOCK_N=64,128 \
     --space schedule=heuristic,solver
   tune attention_causal_d64.mlir 64 32 --space skip_rescale=0,1 --space schedule=heuristic,solver ;;
3) timeout 500 python3 benchmarks/bench_attention.py --markdown --repeat 5 --tuned examples 2>&1 | tail -16 ;;
# PART=5 (d128) and 6 (d64): the launch and what shared memory holds besides the K/V
# rings (persistent, tile_prefetch, tma_store; docs/perf.md, 2026-11-27 second part),
# 100 ms windows. The shipped 16k entries came from `scripts/exp_persistent.sh`'s longer
# windows: candidates within 2% of each other swap between runs.
5|6) LAUNCH="--space persistent=0,1 --space tile_prefetch=0,1 --space tma_store=0,1"
   if [ "$PART" = 5 ]; then
     TUNE_S=290 tune attention.mlir 128 16 --rep-ms 100 --space BLOCK_N=128,160 --space skip_rescale=0,1 $LAUNCH
     TUNE_S=290 tune attention_causal.mlir 128 16 --rep-ms 100 --space skip_rescale=0,1 $LAUNCH
   else
     TUNE_S=290 tune attention_d64.mlir 64 32 --rep-ms 100 --space BLOCK_N=64,128 --space skip_rescale=0,1 $LAUNCH
     TUNE_S=290 tune attention_causal_d64.mlir 64 32 --rep-ms 100 --space skip_rescale=0,1 $LAUNCH
   fi ;;
# PART=7: d128 non-causal at 1k and 4k keys with the epilogue under the next tile's first
# MMA (overlap_epilogue; it lost at d64 and causal, docs/perf.md 2026-11-27 eighth part)
7) timeout 400 python3 -m tawac.tools.cli tune examples/attention.mlir --size B=32,H=16,S=1024,D=128 \
     --size B=8,H=16,S=4096,D=128 --rep-ms 100 --rounds 5 --space skip_rescale=0,1 \
     --space overlap_epilogue=0,1 2>&1 | grep -E "^table|rror|S=" | tail -12 ;;
esac
cp examples/*.tune.json $OUT/
