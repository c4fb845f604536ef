#!/usr/bin/env bash
# Issue 20: how far apart the two consumer warp groups run (scripts/phase_offsets.py) in the
# loops the model misprices most, against their twins it prices well.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
run() {  # name size source options...
  local name=$1 size=$2; shift 2
  timeout 120 python3 -m tawac.cli run "$@" --size $size --trace-every 8 --trace-out /tmp/$name.json > /tmp/$name.log 2>&1 || tail -3 /tmp/$name.log
  echo "$name: $(python3 scripts/phase_offsets.py /tmp/$name.json)"
  python3 - /tmp/$name.json <<'PY'
import json, sys, collections, statistics
d = json.load(open(sys.argv[1]))
iters = collections.defaultdict(list)
for e in d["traceEvents"]:
    if e.get("ph") == "X" and e.get("name","").startswith("iteration") and "cycles" in e.get("args", {}):
        iters[(e["name"], e["tid"])].append(e["args"]["cycles"])
for k, v in sorted(iters.items()):
    if len(v) > 20:
        print(f"   {k}: n={len(v)} median cycles {statistics.median(v)}")
PY
}
D64=B=4,H=16,S=4096,D=64
C64=B=8,H=16,S=4096,D=64
D128=B=4,H=16,S=4096,D=128
run causal_heur $C64 tests/data/attention_causal_d64_bn64.mlir --schedule heuristic
run causal_solv $C64 tests/data/attention_causal_d64_bn64.mlir --schedule solver
run d64_heur $D64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule heuristic --widen 1
run d64_solv $D64 examples/attention_d64.mlir -D BLOCK_M=128 -D BLOCK_N=64 --schedule solver --widen 1
run bias_heur $D128 tests/data/attention_bias.mlir -D BLOCK_N=64 --schedule heuristic
run bias_solv $D128 tests/data/attention_bias.mlir -D BLOCK_N=64 --schedule solver
