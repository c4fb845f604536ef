"""Whether a loop's time depends on where its operands live: a corpus program timed on
its own arguments and on the same arguments with some inputs replaced by others of the
same shape (so that two operands are one tensor in memory), in one run, round-robin.

    python3 experiments/probe_operands.py gemm_two_accumulators --alias u=a,d=b [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    import torch
    from bench_corpus import Build, load_corpus, time_round_robin

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("program")
    ap.add_argument("--alias", required=True, help="arg=other,...: pass other as arg")
    ap.add_argument("--planner", default="heuristic")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    entry = next(e for e in load_corpus() if e["name"] == a.program)
    build = Build(entry, a.planner)
    args = build.args(entry["sizes"])
    names = [p["name"] for p in build.sidecar["args"]]
    aliased = list(args)
    for pair in a.alias.split(","):
        dst, src = pair.split("=")
        aliased[names.index(dst)] = args[names.index(src)]
    fns = {
        "own": lambda: build.kernel(*args),
        "aliased": lambda: build.kernel(*aliased),
    }
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    ms = time_round_robin(fns, a.rounds)
    print(f"{a.program} ({a.planner}): own {ms['own']:.4f} ms, {a.alias} {ms['aliased']:.4f} ms")


if __name__ == "__main__":
    main()
