#!/usr/bin/env bash
# 2026-11-27 eighth session (issue 23's standing): PART=1 the GPU suite, then prefill
# attention through the shipped tables and at the defaults against cuDNN (12 shapes,
# bench_attention.py --tuned examples); PART=2 the 54 decode shapes through the
# shipped table against SDPA with a clean L2. Logs go to $OUT (.whl carried).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=/tmp/cache
nvidia-smi --query-gpu=name --format=csv,noheader
case ${PART:-1} in
1) timeout 220 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests 2>&1 | tail -4
   timeout 330 python3 benchmarks/bench_attention.py --markdown --repeat 5 --tuned examples \
     > $OUT/prefill.log 2>&1
   grep -v "Warning\|^tuned\|return sdpa" $OUT/prefill.log | tail -20 ;;
2) timeout 570 python3 benchmarks/bench_attention_decode.py --configs 64s16 --table --rounds 3 \
     --l2 clean > $OUT/decode.log 2>&1
   grep -v "^#   \|Warning\|return sdpa" $OUT/decode.log | tail -64 ;;
esac
