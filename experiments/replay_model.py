"""Replay of cost-model figures on a stored corpus run: the model's error on every traced
loop, and the build the `auto` planner would pick for each program against the run's
measured heuristic and solver times, for the shipped target and for each variant given
(`--variant` sets `Target` fields, e.g. `Target.mma_mufu_hold`: an MMA holds the tensor
core while ptxas spreads the independent exponentials issued after it between its
wgmmas; `Target.phase_leads`: the starts the consumer warp groups are priced from;
docs/perf.md, 2026-11-27).

    python3 experiments/replay_model.py [--variant "mma_mufu_hold=1.0;phase_leads=0,1" ...]
        [--no-picks] [RUN.json ...]
        # default runs: the four parts of docs/data/corpus-h100-2026-11-26-s13
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def schedules(corpus: list[dict], planner: str) -> dict[str, Any]:
    """Each program's schedule under `planner` and the shared target (None where it does
    not plan)."""
    from tawac.support.diagnostics import CompileError
    from tawac.tools.calibrate import prepare

    out: dict[str, Any] = {}
    for p in corpus:
        try:
            out[p["name"]] = prepare(ROOT / p["source"], p.get("defines") or {}, planner).plan
        except CompileError:
            out[p["name"]] = None
    return out


#: What `report_picks` says of a marked program.
MARK = "its solver schedule differs from the shipped model's"


def report_picks(corpus: list[dict], rows: dict, marked: frozenset[str] = frozenset()) -> None:
    """The build `auto` takes (under the shared target) per program the run timed under
    both planners, against the faster of the two: the programs below 0.98 and the
    `marked` ones printed, the geomean and the lowest over all."""
    auto = schedules(corpus, "auto")
    ratios = []
    gains = []  # auto over the heuristic's build, programs outside examples/
    for p in corpus:
        name = p["name"]
        timed = rows.get(name, {}).get("planners", {})
        h, sv = (timed.get(c, {}).get("ms") for c in ("heuristic", "solver"))
        if not h or not sv:
            continue
        plan = auto[name]
        chosen = plan.auto.chosen if plan is not None and plan.auto is not None else "heuristic"
        ratio = min(h, sv) / (sv if chosen == "solver" else h)
        ratios.append(ratio)
        if "example" not in p.get("tags", []):
            gains.append(h / (sv if chosen == "solver" else h))
        if ratio < 0.98 or name in marked:
            mark = f" ({MARK})" if name in marked else ""
            print(f"    auto takes the {chosen}'s {name}: {ratio:.3f} of the faster "
                  f"(heuristic {h:.4f} ms, solver {sv:.4f} ms){mark}")  # fmt: skip
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"  auto / the faster build over {len(ratios)} programs: geomean {geo:.4f}, "
              f"lowest {min(ratios):.3f}")  # fmt: skip
    if gains:
        geo = math.exp(sum(map(math.log, gains)) / len(gains))
        print(f"  auto / the heuristic over {len(gains)} programs outside examples/: "
              f"geomean {geo:.4f}")  # fmt: skip


#: The stored corpus run the replays default to (H100, 2026-11-26, s13).
DEFAULT_RUNS = "docs/data/corpus-h100-2026-11-26-s13-part*.json"


def load_runs(runs: list[str]) -> tuple[list[str], list[dict], list[dict], dict, list]:
    """The run files (`DEFAULT_RUNS` where none is given), their documents, the corpus
    manifest's programs, the runs' rows by program, and every traced loop planned as it
    ran (`tawac.tools.calibrate.prepare_all`)."""
    from tawac.tools import calibrate

    files = runs or sorted(glob.glob(str(ROOT / DEFAULT_RUNS)))
    docs = [json.loads(Path(f).read_text()) for f in files]
    corpus = json.loads((ROOT / "corpus/corpus.json").read_text())["programs"]
    rows = {r["name"]: r for d in docs for r in d["rows"]}
    preps = calibrate.prepare_all(calibrate.observations_from_bench(docs, corpus))
    return files, docs, corpus, rows, preps


def _variant(text: str) -> dict:
    """`field=value;field=value` as `Target` field values (a tuple field: commas)."""
    from tawac.target import HOPPER

    out: dict = {}
    for item in filter(None, text.split(";")):
        name, _, value = item.partition("=")
        kept = getattr(HOPPER, name.strip())
        if isinstance(kept, tuple):
            out[name.strip()] = tuple(float(v) for v in value.split(","))
        else:
            out[name.strip()] = type(kept)(value)
    return out


def main() -> None:
    from tawac.target import HOPPER, overridden
    from tawac.tools import calibrate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--no-picks", action="store_true")
    ap.add_argument("runs", nargs="*")
    args = ap.parse_args()
    files, docs, corpus, rows, preps = load_runs(args.runs)
    for text in ["", *args.variant]:
        changes = _variant(text)
        target = dataclasses.replace(HOPPER, **changes)
        errs = calibrate.errors(preps, target)
        s = calibrate.summary(errs)
        over = sorted((o for o in errs if abs(o[1]) > 0.2), key=lambda x: -abs(x[1]))
        print(f"{text or 'shipped'}: loops {s['loops']}, median {s['median']:.1%}, worst "
              f"{s['worst']:.1%}, score {calibrate.score(errs):.4f}")  # fmt: skip
        for o, e in over:
            print(f"    over 20%: {o.name} {o.config} loop {o.k}: {e:+.1%}")
        if args.no_picks:
            continue
        with overridden(changes):
            report_picks(corpus, rows)


if __name__ == "__main__":
    main()
