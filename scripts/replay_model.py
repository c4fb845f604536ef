"""Replay of cost-model figures on a stored corpus run: the model's error on every traced
loop, and the build the `auto` planner would pick for each program against the run's
measured heuristic and solver times, for the shipped target and for each variant given
(`--set` of `Target` fields, e.g. `Target.mma_mufu_hold`: an MMA holds the tensor core
while ptxas spreads the independent exponentials issued after it between its wgmmas;
`Target.phase_leads`: the starts the consumer warp groups are priced from; docs/perf.md,
2026-11-27).

    python3 scripts/replay_model.py [--set mma_mufu_hold=1.0 --set phase_leads=0,1 ...]
        [--variant "mma_mufu_hold=1.0;phase_leads=0,1"] [--no-picks] [RUN.json ...]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _auto_picks(corpus: list[dict], rows: dict) -> list[tuple[str, str, float, float]]:
    """(program, the planner auto takes, heuristic ms, solver ms) where the run has both."""
    from tawac.calibrate import prepare

    out = []
    for p in corpus:
        r = rows.get(p["name"])
        if r is None:
            continue
        h, s = (r["planners"].get(c, {}).get("ms") for c in ("heuristic", "solver"))
        if not h or not s:
            continue
        plan = prepare(ROOT / p["source"], p.get("defines") or {}, "auto").plan
        chosen = plan.auto.chosen if plan.auto is not None else "heuristic"
        out.append((p["name"], chosen, h, s))
    return out


#: The stored corpus run the replays default to (H100, 2026-11-26, s13).
DEFAULT_RUNS = "docs/data/corpus-h100-2026-11-26-s13-part*.json"


def load_runs(runs: list[str]) -> tuple[list[str], list[dict], list[dict], dict, list]:
    """The run files (`DEFAULT_RUNS` where none is given), their documents, the corpus
    manifest's programs, the runs' rows by program, and every traced loop planned as it
    ran (`tawac.calibrate.prepare_all`)."""
    from tawac import calibrate

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
    from tawac import calibrate
    from tawac.target import HOPPER

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
        # The auto planner prices with the shared target (its default argument): the
        # replay sets the figures on it for the picks, then puts them back.
        kept = {k: getattr(HOPPER, k) for k in changes}
        for k, v in changes.items():
            object.__setattr__(HOPPER, k, v)
        try:
            picks = _auto_picks(corpus, rows)
        finally:
            for k, v in kept.items():
                object.__setattr__(HOPPER, k, v)
        ratios = []
        for name, chosen, h, sv in picks:
            ratio = min(h, sv) / (sv if chosen == "solver" else h)
            ratios.append(ratio)
            if ratio < 0.98:
                print(f"    auto below 0.98: {name} takes the {chosen}'s ({ratio:.3f}; "
                      f"heuristic {h:.4f} ms, solver {sv:.4f} ms)")  # fmt: skip
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"  auto / the faster build over {len(ratios)} programs: geomean {geo:.4f}, "
              f"lowest {min(ratios):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
