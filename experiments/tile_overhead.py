"""Where a persistent kernel's time goes outside its steady main loop, from a sampled
trace (`tawac run --trace-every N --trace-out T.json`): per consumer warp group and
tile (the span between two stamps of the tile loop, `iteration loop0`), the steady
iteration of the inner main loop (`iteration loop1` stamps, N iterations apart), the
epilogue, and what the tile took beyond `iterations` steady iterations.

    python3 experiments/tile_overhead.py T.json --iterations 32 --every 8

Medians over every tile of every consumer track but each track's first and last.
Times in microseconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--iterations", type=int, required=True, help="inner-loop trips per tile")
    ap.add_argument("--every", type=int, default=8, help="the build's --trace-every")
    args = ap.parse_args()
    doc = json.loads(Path(args.trace).read_text())
    tracks = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if "ts" in e and e.get("ph") in ("X", "i"):
            tracks[(e["pid"], e["tid"])].append(e)
    rows = collections.defaultdict(list)
    for evs in tracks.values():
        evs.sort(key=lambda e: e["ts"])
        if not any(e.get("name") == "epilogue" for e in evs):
            continue  # the producer
        starts = [i for i, e in enumerate(evs) if e.get("name") == "iteration loop0"]
        for a, b in zip(starts[1:-1], starts[2:], strict=False):
            inner = [e["ts"] for e in evs[a:b] if e.get("name") == "iteration loop1"]
            epi = [e for e in evs[a:b] if e.get("name") == "epilogue"]
            if len(inner) < 2 or not epi:
                continue
            gaps = [y - x for x, y in zip(inner[:-1], inner[1:], strict=True)]
            steady = statistics.median(gaps) / args.every
            tile = evs[b]["ts"] - evs[a]["ts"]
            rows["tile"].append(tile)
            rows["steady inner iteration"].append(steady)
            rows["tile start to first sampled inner stamp"].append(inner[0] - evs[a]["ts"])
            rows["last sampled inner stamp to epilogue"].append(epi[0]["ts"] - inner[-1])
            rows["epilogue"].append(epi[0].get("dur", 0.0))
            rows["tile beyond iterations x steady"].append(tile - args.iterations * steady)
            rows["share beyond (%)"].append(100 * (tile - args.iterations * steady) / tile)
    if not rows:
        print("no consumer tile with inner-loop stamps and an epilogue in this trace")
        return 1
    for name, vals in rows.items():
        q = statistics.quantiles(vals, n=10) if len(vals) > 1 else [vals[0]] * 9
        print(
            f"{name:42s} median {statistics.median(vals):8.2f}  p10 {q[0]:8.2f}  "
            f"p90 {q[-1]:8.2f}  ({len(vals)} tiles)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
