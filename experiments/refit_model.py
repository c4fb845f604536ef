"""Refit the calibrated figures to a stored corpus run under a model variant, then replay
what the `auto` planner would do with them (docs/perf.md, 2026-11-27, second part).

    python3 experiments/refit_model.py --variant '{"mma_mufu_hold": 1.0, "if_taken": 0.0}' \\
        [--rounds 2] [--params mma_group_cycles,get_cycles,...] [--start PARAMS.json]
        [--no-fit] [RUN.json ...]    # default runs: docs/data/corpus-h100-2026-11-26-s13

Prints the loop errors before and after the fit; then, with the fitted figures, the
planner errors and preferences re-derived from the runs, which plans change, and the
build `auto` would take per program against the run's measured heuristic and solver
times. A program whose solver schedule changes under the variant is marked: its replay
says nothing unless the runs given were measured under the variant
(`experiments/exp_model_variant.sh`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _shape(plan) -> str | None:
    """What of a schedule a variant may change: its loops and arefs."""
    return None if plan is None else str(plan.loops) + str(plan.arefs)


def main() -> None:
    from replay_model import load_runs, report_picks, schedules

    from tawac.target import HOPPER, overridden
    from tawac.target.calibration import PARAMS, with_params
    from tawac.tools import calibrate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", default="{}", help="Target fields as JSON")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--params", default=",".join(PARAMS))
    ap.add_argument("--start", help="fitted figures to start from (JSON file)")
    ap.add_argument("--no-fit", action="store_true", help="replay the start figures only")
    ap.add_argument("--write", help="a calibration file of the variant, the fitted figures "
                    "and the re-derived planner errors and preferences")  # fmt: skip
    ap.add_argument("runs", nargs="*")
    args = ap.parse_args()
    files, docs, corpus, rows, preps = load_runs(args.runs)
    variant = {
        k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(args.variant).items()
    }
    base = dataclasses.replace(HOPPER, **variant)
    start = json.loads(Path(args.start).read_text()) if args.start else {}
    if start:
        base = with_params(base, start, HOPPER.calibration)
    errs = calibrate.errors(preps, base)
    s = calibrate.summary(errs)
    print(f"variant: median {s['median']:.1%}, worst {s['worst']:.1%}, "
          f"score {calibrate.score(errs):.4f}")  # fmt: skip
    target = base
    if not args.no_fit:
        t0 = time.time()
        target, got = calibrate.fit(
            preps, base, tuple(args.params.split(",")), args.rounds,
            log=lambda m: print(f"  {time.time() - t0:5.0f} s  {m}", flush=True),
        )  # fmt: skip
        print("fitted:", json.dumps(got))
    errs = calibrate.errors(preps, target)
    s = calibrate.summary(errs)
    print(f"fitted: median {s['median']:.1%}, worst {s['worst']:.1%}, "
          f"score {calibrate.score(errs):.4f}")  # fmt: skip
    for o, e in sorted(errs, key=lambda x: -abs(x[1]))[:6]:
        print(f"    {o.name} {o.config} loop {o.k}: {e:+.1%}")

    before = {n: _shape(plan) for n, plan in schedules(corpus, "solver").items()}
    fitted = {f.name: getattr(target, f.name) for f in dataclasses.fields(target)}
    with overridden(fitted):
        preference = calibrate.planner_preference(docs, corpus)
        kinds = calibrate.planner_errors(docs, corpus, preference=preference)
        print("preference", preference, "planner errors", kinds)
        if args.write:
            device = " + ".join(sorted({d.get("device", "?") for d in docs}))
            calibrate.write(
                Path(args.write), calibrate.params_of(target),
                f"{device} (refit: experiments/refit_model.py)", {}, s,
                [*files, f"variant {args.variant}"], kinds, preference, variant,
            )  # fmt: skip
            print(f"wrote {args.write}")
        merged = tuple((k, preference.get(k, p)) for k, p in target.planner_preference)
        decided = {"planner_errors": tuple(sorted(kinds.items())), "planner_preference": merged}
        with overridden(decided):
            after = schedules(corpus, "solver")
            moved = frozenset(n for n, plan in after.items() if _shape(plan) != before[n])
            report_picks(corpus, rows, moved)


if __name__ == "__main__":
    main()
