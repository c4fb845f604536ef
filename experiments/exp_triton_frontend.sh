#!/usr/bin/env bash
# Issue 21 on the GPU machine (run from the repository root, .whl carried): the GPU tests
# of the Triton front end, then the Triton-source benchmarks (matmul, epilogue, fused
# attention not causal and causal), Triton vs tawac in the same run. Results to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name --format=csv,noheader
part="${1:-all}"
if [[ $part == all || $part == tests ]]; then
  timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/test_triton_attention.py \
    tests/test_triton_persistent.py tests/test_convert_ttir.py tests/test_triton_abi.py 2>&1 | tail -15
fi
if [[ $part == all || $part == attention ]]; then
  timeout 240 python3 benchmarks/bench_triton_attention.py --rounds 5 2>&1 | tee $OUT/attention.log
  timeout 240 python3 benchmarks/bench_triton_attention.py --causal --rounds 5 2>&1 | tee $OUT/attention-causal.log
fi
if [[ $part == all || $part == persistent ]]; then
  timeout 200 python3 benchmarks/bench_triton.py --program persistent --rounds 5 2>&1 | tee $OUT/persistent.log
  timeout 200 python3 benchmarks/bench_triton.py --program descriptor --rounds 5 2>&1 | tee $OUT/descriptor.log
fi
if [[ $part == all || $part == matmul ]]; then
  timeout 200 python3 benchmarks/bench_triton.py --program matmul --rounds 5 2>&1 | tee $OUT/matmul.log
fi
