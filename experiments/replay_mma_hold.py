"""Replay of a model rule on a stored corpus run (docs/perf.md, 2026-11-26, seventh part):
an MMA preceded in its warp group's issue order, within the same basic block (no `scf.if`
and no other MMA between), by MUFU work it does not depend on holds the tensor unit for
that work's issue time as well (ptxas spreads the MUFU instructions between the MMA's
wgmma instructions). Prints the model's errors on the traced loops without and with the
rule, every program planned once, as it ran, then priced both ways.

    python3 experiments/replay_mma_hold.py [--run docs/data/corpus-h100-2026-11-26-s6.json]
        [--latency]   # the held time delays the MMA's result too
        [--units mufu,fma]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _needed(steps, i: int) -> set[int]:
    """The steps step `i` depends on within one iteration of its lane (transitively)."""
    need: set[int] = set()
    work = [i]
    while work:
        for d in steps[work.pop()].deps:
            if not d.lane and d.distance == 0 and d.step not in need:
                need.add(d.step)
                work.append(d.step)
    return need


def held_lanes(lanes, units: tuple[str, ...], latency: bool):
    """`lanes` with each consumer MMA's tensor occupancy (and latency, with `latency`)
    extended by the issue time of the independent `units` work before it in its block."""
    out = []
    for lane in lanes:
        if lane.role != "consumer":
            out.append(lane)
            continue
        steps = list(lane.steps)
        for i, s in enumerate(steps):
            if s.unit != "tensor":
                continue
            need = _needed(steps, i)
            held = 0.0
            j = i - 1
            while j >= 0 and steps[j].unit != "tensor" and not steps[j].label.endswith(" if"):
                if steps[j].unit in units and j not in need:
                    held += steps[j].issue
                j -= 1
            if held:
                more = {"latency": s.latency + held} if latency else {}
                steps[i] = dataclasses.replace(s, occupancy=s.occupancy + held, **more)
        out.append(dataclasses.replace(lane, steps=tuple(steps)))
    return out


def main() -> None:
    import tawac.schedule.model as model
    from tawac.target import HOPPER
    from tawac.tools import calibrate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=str(ROOT / "docs/data/corpus-h100-2026-11-26-s6.json"))
    ap.add_argument("--latency", action="store_true")
    ap.add_argument("--units", default="mufu")
    args = ap.parse_args()
    corpus = json.loads((ROOT / "corpus/corpus.json").read_text())["programs"]
    docs = [json.loads(Path(args.run).read_text())]
    preps = calibrate.prepare_all(calibrate.observations_from_bench(docs, corpus))
    original = model.loop_lanes
    units = tuple(args.units.split(","))

    def patched(*a, **k):
        return held_lanes(original(*a, **k), units, args.latency)

    for name, lanes in (("without the rule", original), ("with the rule", patched)):
        model.loop_lanes = lanes
        errs = calibrate.errors(preps, HOPPER)
        s = calibrate.summary(errs)
        over = sum(abs(e) > 0.2 for _, e in errs)
        print(
            f"{name}: median {s['median']:.1%}, worst {s['worst']:.1%}, {over} of "
            f"{s['loops']} over 20%, score {calibrate.score(errs):.4f}"
        )
        seen: set[tuple[str, str]] = set()
        for o, e in sorted(errs, key=lambda x: -abs(x[1])):
            if (o.name, o.config) in seen or len(seen) >= 8:
                continue
            seen.add((o.name, o.config))
            print(f"    {o.name} {o.config}: {e:+.1%}")
    model.loop_lanes = original


if __name__ == "__main__":
    main()
