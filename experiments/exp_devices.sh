python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=index,name --format=csv,noheader
timeout 200 python3 -m tawac.tools.cli tune examples/gemm.mlir --size M=2048,N=2048,K=2048 --size M=4096,N=4096,K=4096 --size M=8192,N=8192,K=1024 --space stages=3,4 --table $OUT/gemm.tune.json --rep-ms 50 2>&1 | grep -v "^\s*$" | tail -25
timeout 200 python3 -m tawac.tools.cli calibrate --only gemm_bf16_128x128,attention_d64_64x64,gemm_bf16_128x256 --planners heuristic,solver --rounds 1 -o $OUT/cal.json 2>&1 | tail -12
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_trace.py tests/test_tune.py -x 2>&1 | tail -3
