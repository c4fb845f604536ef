#!/usr/bin/env bash
# The corpus's non-example programs compiled by an older tawac (a worktree at REV), with
# its default planner, into .bench-cache/baseline-REV/NAME.{cubin,json}: the kernels of
# that day, for `benchmarks/bench_baseline.py` to time against today's in one run.
#   scripts/build_baseline.sh REV        (needs ptxas; run from the repository root)
set -euo pipefail
rev=$(git rev-parse --short "$1")
out=$PWD/.bench-cache/baseline-$rev
tree=$(mktemp -d)/tawac-$rev
git worktree add -f -q "$tree" "$rev"
mkdir -p "$out"
python3 - "$tree" "$out" <<'PY'
import json, os, subprocess, sys
tree, out = sys.argv[1], sys.argv[2]
env = {**os.environ, "PYTHONPATH": tree, "TAWAC_CACHE_DIR": out + "/.cache"}
corpus = json.load(open("corpus/corpus.json"))["programs"]
done = 0
for e in corpus:
    if "example" in e["tags"]:
        continue
    defines = [x for k, v in (e.get("defines") or {}).items() for x in ("-D", f"{k}={v}")]
    cmd = [sys.executable, "-m", "tawac.tools.cli", "compile", os.path.join(tree, e["source"]),
           *defines, "-o", os.path.join(out, e["name"] + ".cubin")]
    res = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if res.returncode:
        print(f"{e['name']}: {res.stderr.strip().splitlines()[-1] if res.stderr else res.returncode}")
        continue
    done += 1
print(f"baseline {os.path.basename(out)}: {done} programs")
PY
git worktree remove --force "$tree"
