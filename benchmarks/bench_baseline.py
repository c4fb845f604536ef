"""Today's kernels against those an older tawac built, in one run: each non-example
corpus program's kernel under a planner configuration of today (default: auto) and the
baseline's kernel (`scripts/build_baseline.sh REV`: the default planner of commit REV),
on the same arguments, timed round-robin; the outputs compared first.

    python3 benchmarks/bench_baseline.py --baseline .bench-cache/baseline-REV
        [--planners auto,heuristic] [--rounds 5] [--only NAME,...]

Issue 20 asks that auto be 1.08x "the heuristic" off the examples, measured against the
heuristic of the day it was filed: this is that measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _max_rel(a, b) -> float:
    """Max |a - b| over max |b| of two output tensors."""
    a, b = a.float(), b.float()
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-6))


def main(argv: list[str] | None = None) -> int:
    import torch
    from bench_corpus import Build, load_corpus, time_round_robin

    from tawac.analysis.args import kernel_arg_uses
    from tawac.runtime import load_kernel

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="folder of NAME.cubin and NAME.json")
    ap.add_argument("--planners", default="auto", help="today's configurations to time")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    base = Path(args.baseline)
    planners = args.planners.split(",")
    entries = [e for e in load_corpus() if "example" not in e["tags"]]
    if args.only:
        entries = [e for e in entries if e["name"] in set(args.only.split(","))]
    dev = torch.cuda.get_device_properties(0)
    print(f"# baseline {base.name} vs today ({', '.join(planners)}), {dev.name}, "
          f"{args.rounds} round-robin rounds")  # fmt: skip
    cols = " | ".join(f"{p} ms | {p} / baseline | {p} vs baseline output" for p in planners)
    print(f"| program | baseline ms | {cols} |")
    print("|---|---:|" + "---:|---:|---:|" * len(planners))
    rows = []
    for e in entries:
        cubin, side = base / f"{e['name']}.cubin", base / f"{e['name']}.json"
        if not cubin.exists():
            print(f"| {e['name']} | (no baseline build) |")
            continue
        old = load_kernel(cubin.read_bytes(), json.loads(side.read_text()))
        builds = {p: Build(e, p) for p in planners}
        first = next(iter(builds.values()))
        kargs = first.args(e["sizes"])
        outs = sorted(kernel_arg_uses(first.op)[1])  # the arguments the kernel stores
        old(*kargs)
        torch.cuda.synchronize()
        ref = [kargs[i].clone() for i in outs] if outs else []
        errors = {}
        for p, b in builds.items():
            b.kernel(*kargs)
            torch.cuda.synchronize()
            pairs = zip(outs, ref, strict=True)
            errors[p] = max((_max_rel(kargs[i], r) for i, r in pairs), default=0.0)
        fns = {"baseline": lambda k=old, a=kargs: k(*a)}
        fns.update({p: (lambda k=b.kernel, a=kargs: k(*a)) for p, b in builds.items()})
        ms = time_round_robin(fns, args.rounds)
        row = {"name": e["name"], "baseline": ms["baseline"], "errors": errors}
        row.update({p: ms[p] for p in planners})
        rows.append(row)
        cells = " | ".join(
            f"{ms[p]:.4f} | {ms['baseline'] / ms[p]:.3f}x | {errors[p]:.1e}" for p in planners
        )
        print(f"| {e['name']} | {ms['baseline']:.4f} | {cells} |", flush=True)
        if args.json:  # after every row: a run cut short keeps what it measured
            Path(args.json).write_text(json.dumps({"device": dev.name, "rows": rows}, indent=1))
    for p in planners:
        ratios = [r["baseline"] / r[p] for r in rows]
        if ratios:
            geo = math.exp(statistics.fmean(math.log(x) for x in ratios))
            low = min(ratios)
            print(f"\n{p} / baseline: geomean {geo:.3f}, lowest {low:.3f} over {len(ratios)}")
    return 0


if __name__ == "__main__":
    from results import run_recorded

    raise SystemExit(run_recorded("baseline", main))
