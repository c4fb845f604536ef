#!/usr/bin/env bash
# Issue 22 on the GPU machine (run from the repository root, .whl carried): the GPU tests
# of split-K and the workspace, then decode GEMMs with split-K configurations next to the
# tuning table and cuBLAS (same run). Results to $OUT.
#   experiments/exp_split_k.sh [tests|decode|ragged|grouped|all]
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
part="${1:-all}"
if [[ $part == all || $part == tests ]]; then
  timeout 400 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_gpu_splitk.py \
    tests/test_workspace_launch.py tests/test_gpu_launch.py 2>&1 | tail -25
fi
if [[ $part == all || $part == decode ]]; then
  timeout 500 python3 benchmarks/bench_gemm_shapes.py --ms 1,8,16,32,64,128 --rounds 5 \
    --configs "${CONFIGS:-64x64x128/d6,64x64x128/s2/d6,64x64x128/s4/d6,64x32x128/s2/d6,64x128x128/s4/d4}" \
    2>&1 | tee $OUT/decode-splitk.log
fi
if [[ $part == all || $part == ragged ]]; then
  timeout 500 python3 benchmarks/bench_gemm_shapes.py --rounds 5 \
    --shapes "${SHAPES:-3000x5000x2000,2304x4608x3072,1000x1000x1000,5120x5120x8192,6144x3072x4096}" \
    --configs "${CONFIGS:-128x256x64,128x256x64/k8,128x128x64,128x128x64/k8,128x192x64,128x192x64/k4}" \
    2>&1 | tee $OUT/ragged-streamk.log
fi
if [[ $part == all || $part == grouped ]]; then
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_gpu_grouped.py 2>&1 | tail -3
  timeout 300 python3 benchmarks/bench_gemm_grouped.py --rounds 5 2>&1 | tee $OUT/grouped.log
  if [[ ${FP8:-1} == 1 ]]; then
    timeout 200 python3 benchmarks/bench_gemm_grouped.py --fp8 --rounds 5 2>&1 | tee $OUT/grouped-fp8.log
  fi
fi
