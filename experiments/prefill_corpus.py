"""Compile every corpus program under each configuration into the compile cache, in
parallel, so that `benchmarks/bench_corpus.py` (which compiles one at a time) starts warm:

    python3 experiments/prefill_corpus.py --planners heuristic,solver --trace-every 8 [--cubin]
        [--only NAME,...] [--part I/N] [-j N]

Without `--cubin` only the PTX (the expensive part: the passes and the solver) is cached;
with it, the cubin too (ptxas's version is in the key: run it where the benchmark runs).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _one(entry: dict, config: str, trace_every: int, cubin: bool) -> str:
    from bench_corpus import parse_config

    from tawac.driver import compile_cached

    planner, fields = parse_config(config)
    if trace_every:
        fields = {**fields, "trace": True, "trace_every": trace_every}
    try:
        compile_cached(
            ROOT / entry["source"],
            params=entry.get("defines") or None,
            cubin=cubin,
            schedule=planner,
            **fields,
        )
    except Exception as exc:  # reported, the others go on
        return f"{entry['name']} {config} trace={trace_every}: {type(exc).__name__}: {exc}"
    return ""


def main(argv: list[str] | None = None) -> int:
    from bench_corpus import load_corpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--planners", default="heuristic,solver")
    ap.add_argument("--trace-every", type=int, default=0, help="also the sampled traced builds")
    ap.add_argument("--cubin", action="store_true")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--part", default="", help="I/N: the I-th of N slices, as bench_corpus's")
    args = ap.parse_args(argv)
    entries = load_corpus()
    if args.only:
        entries = [e for e in entries if e["name"] in set(args.only.split(","))]
    if args.part:
        i, n = (int(x) for x in args.part.split("/"))
        entries = entries[(i - 1) * len(entries) // n : i * len(entries) // n]
    jobs = [
        (e, c, t, args.cubin)
        for e in entries
        for c in args.planners.split(",")
        for t in sorted({0, args.trace_every})
    ]
    failed = 0
    with cf.ProcessPoolExecutor(args.j) as ex:
        for msg in ex.map(_one, *zip(*jobs, strict=True)):
            if msg:
                failed += 1
                print(msg, flush=True)
    print(f"prefill: {len(jobs) - failed} of {len(jobs)} compiled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
