#!/usr/bin/env bash
# Issue 20: inputs for the cost model's worst loops. Microbenchmarks of the softmax's
# FMA-pipe ops (max, mul, cvt packing, ex2 mixed with FMAs), the SASS of the loop of
# heuristic and solver attention schedules (opcode counts of the loop body), and
# every-iteration traces of both.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
python3 scripts/microbench_hopper.py --only convert | sed 's/^@@ROWS //' | python3 -c "
import json,sys
for r in json.loads(sys.stdin.read()): print('%-6s %-45s %8.2f %s' % (r['unit'], r['op'], r['value'] or -1, r['units']))"
sass() {  # name source schedule defines...
  local name=$1 src=$2 sched=$3; shift 3
  python3 -m tawac.tools.cli compile $src --schedule $sched "$@" -o /tmp/$name.cubin 2>&1 | tail -2
  cuobjdump -sass /tmp/$name.cubin > $OUT/$name.sass 2>&1
  python3 - "$OUT/$name.sass" <<'PY'
import re, sys, collections
lines = open(sys.argv[1]).read().splitlines()
ops = [re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", l).split(";")[0].strip() for l in lines if re.match(r"\s*/\*[0-9a-f]{4}\*/", l)]
c = collections.Counter(o.split()[0] if not o.startswith("@") else o.split()[1] for o in ops if o)
print(sys.argv[1].split("/")[-1], len(ops), "instructions:", ", ".join(f"{k} {v}" for k, v in c.most_common(28)))
PY
}
sass d128_128x64_solver examples/attention.mlir solver -D BLOCK_M=128 -D BLOCK_N=64
sass d128_128x64_heuristic examples/attention.mlir heuristic -D BLOCK_M=128 -D BLOCK_N=64
sass d64_128x128_heuristic examples/attention_d64.mlir heuristic -D BLOCK_M=128 -D BLOCK_N=128
sass d64_128x128_solver examples/attention_d64.mlir solver -D BLOCK_M=128 -D BLOCK_N=128
