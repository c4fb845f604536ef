"""The shipped tuning tables re-measured under another planner (`auto` as the
default must leave the examples no slower): for every entry of every
`examples/*.tune.json`, its configuration compiled under the heuristic and under
`--planner` (default `auto`); where the two PTX texts are the same the entry is `same`,
else both run at the entry's sizes (its `sizes`, else its bucket), are checked against
the float32 interpreter and timed round-robin (`tawac.tools.tune.measure_size`), in one run.

    python3 benchmarks/bench_default_planner.py [--planner auto] [--only attention_decode]
        [--rounds 5] [--rep-ms 50] [--limit N]

Prints one row per entry (heuristic ms, planner ms, heuristic / planner: > 1 is faster)
and, over the entries that differ, the geomean and the lowest ratio.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples"


def compiled(source: Path, params: dict, options: dict, planner: str):
    """`tawac.tools.tune.Compiled` of one configuration under `planner`."""
    from tawac.tools.tune import Candidate, Compiled, compile_candidate

    r = compile_candidate(str(source), params, {**options, "schedule": planner})
    candidate = Candidate(dict(params), {**options, "schedule": planner})
    return Compiled(candidate, r.cubin, r.sidecar, dict(params)), r.ptx


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--planner", default="auto", choices=("auto", "solver"))
    ap.add_argument("--only", default="", help="table names (the source's stem), comma-separated")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=50.0)
    ap.add_argument("--limit", type=int, default=0, help="entries per table (0: all)")
    args = ap.parse_args(argv)

    import torch

    from tawac.tools.tune import measure_size

    only = {x for x in args.only.split(",") if x}
    print(
        f"# {datetime.date.today()} {torch.cuda.get_device_name()}: the shipped tuning tables, "
        f"heuristic vs {args.planner}, {args.rounds} round-robin rounds"
    )
    print(f"| table | sizes | configuration | heuristic ms | {args.planner} ms | ratio |")
    print("|---|---|---|---:|---:|---:|")
    ratios: list[float] = []
    same = 0
    for path in sorted(EXAMPLES.glob("*.tune.json")):
        name = path.name.removesuffix(".tune.json")
        if only and name not in only:
            continue
        source = path.with_name(name + ".mlir")
        entries = json.loads(path.read_text())["entries"]
        for entry in entries[: args.limit or None]:
            sizes = entry.get("sizes") or entry["bucket"]
            params, options = entry.get("params", {}), entry.get("options", {})
            h, h_ptx = compiled(source, params, options, "heuristic")
            p, p_ptx = compiled(source, params, options, args.planner)
            where = ",".join(f"{k}={v}" for k, v in sizes.items())
            config = json.dumps({**params, **options}, separators=(",", ":"))
            if h_ptx == p_ptx:
                same += 1
                print(f"| {name} | {where} | {config} | same | same | 1.000 |", flush=True)
                continue
            try:
                timed = measure_size(
                    str(source), sizes, [h, p], rep_ms=args.rep_ms, rounds=args.rounds
                )
            except torch.OutOfMemoryError:  # the float32 reference of a large entry
                print(f"| {name} | {where} | {config} | out of memory | | |", flush=True)
                continue
            finally:
                gc.collect()
                torch.cuda.empty_cache()
            th, tp = (r.time_ms for r in timed.rows)
            bad = [r.reject for r in timed.rows if r.reject]
            if bad or th is None or tp is None:
                print(f"| {name} | {where} | {config} | {'; '.join(bad)} | | |", flush=True)
                continue
            ratios.append(th / tp)
            print(
                f"| {name} | {where} | {config} | {th:.4f} | {tp:.4f} | {th / tp:.3f} |",
                flush=True,
            )
    if ratios:
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(
            f"# {len(ratios)} entries differ ({same} compile the same): heuristic / "
            f"{args.planner} geomean {geo:.3f}, lowest {min(ratios):.3f}"
        )
    else:
        print(f"# every entry compiles the same ({same})")
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("default_planner", main))
