#!/usr/bin/env bash
# Issue 20: the programs whose solver schedule changes under a model variant, measured as
# the corpus benchmark does (heuristic and solver builds, sampled traces), with the
# variant's calibration file as the model (builds prefilled locally into .bench-cache:
#   TAWAC_TARGET_MODEL=FILE TAWAC_CACHE_DIR=$PWD/.bench-cache \
#     python3 experiments/prefill_corpus.py --only LIST --planners heuristic,solver \
#     --trace-every 8 --cubin).
#   experiments/exp_model_variant.sh FILE LIST NAME [PLANNERS]   (carry the xdsl and immutabledict
#   wheels and .bench-cache; PLANNERS default heuristic,solver; $ROUNDS default 3)
set -uo pipefail
model=$1; list=$2; name=$3; planners=${4:-heuristic,solver}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
export TAWAC_TARGET_MODEL=$PWD/$model
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 500 python3 benchmarks/bench_corpus.py --only "$list" --planners "$planners" \
  --trace-every 8 --rounds ${ROUNDS:-3} --json $OUT/$name.json > $OUT/$name.log 2>&1
tail -30 $OUT/$name.log
