#!/usr/bin/env bash
# Issue 22: the decode buckets of examples/gemm.tune.json tuned again with a clean L2
# (`tawac tune --l2 clean`: each call timed after a 256 MB read, not do_bench's memset),
# then the 16 decode shapes through tawac.torch with the new table against cuBLAS under
# both flushes. The updated table is copied to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nk_all="N=4096,K=4096 N=14336,K=4096 N=4096,K=14336 N=8192,K=8192"
sizes=()
for m in 1 16 64; do for nk in $nk_all; do sizes+=(--size "M=$m,$nk"); done; done
timeout 330 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" --l2 clean --rep-ms 50 \
  --space BLOCK_M=64 --space BLOCK_N=32,64,128 --space BLOCK_K=128 \
  --space stages=4,6 --space split_k=1,2,4 2>&1 | grep -E "^table|error|Error" | tail -5
sizes=()
for nk in $nk_all; do sizes+=(--size "M=128,$nk"); done
timeout 150 python3 -m tawac.tools.cli tune examples/gemm.mlir "${sizes[@]}" --l2 clean --rep-ms 50 \
  --space BLOCK_M=64,128 --space BLOCK_N=64,128 --space BLOCK_K=64,128 --space stages=4,6 \
  2>&1 | grep -E "^table|error|Error" | tail -5
cp examples/gemm.tune.json "$OUT/gemm.tune.json"
for l2 in clean dirty; do
  timeout 200 python3 benchmarks/bench_gemm_shapes.py --configs 64x128x64 --rounds 5 --l2 $l2 > $OUT/decode-$l2.log 2>&1
  tail -18 $OUT/decode-$l2.log
done
