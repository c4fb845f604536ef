"""Per-SM spans of a Chrome trace (`tawac run --trace-out`): for each track (SM, warp
group), the first and last stamps, the events in between by name (count, total time),
and the first and last few events, in microseconds from the track's first stamp.

    python3 experiments/trace_spans.py full.trace.json [--tracks 4]
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
    ap.add_argument("--tracks", type=int, default=3)
    ap.add_argument("--event", action="append", default=[], help="durations of these events")
    args = ap.parse_args()
    doc = json.loads(Path(args.trace).read_text())
    tracks = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") in ("X", "i", "B", "E") and "ts" in e:
            tracks[(e.get("pid"), e.get("tid"))].append(e)
    spans = {}
    for key, evs in tracks.items():
        evs.sort(key=lambda e: e["ts"])
        start = evs[0]["ts"]
        end = max(e["ts"] + e.get("dur", 0) for e in evs)
        spans[key] = end - start
    by_tid = collections.defaultdict(list)
    for (_pid, tid), span in spans.items():
        by_tid[tid].append(span)
    for tid, vals in sorted(by_tid.items(), key=lambda x: str(x[0])):
        print(
            f"track {tid}: {len(vals)} SMs, span us min {min(vals):.1f} median "
            f"{statistics.median(vals):.1f} max {max(vals):.1f}"
        )
    for name in args.event:
        durs = sorted(
            e.get("dur", 0) for evs in tracks.values() for e in evs if e.get("name") == name
        )
        if durs:
            print(
                f"event {name}: {len(durs)} x, us min {durs[0]:.2f} median "
                f"{statistics.median(durs):.2f} max {durs[-1]:.2f}; longest {durs[-6:]}"
            )
    for key in sorted(tracks, key=str)[: args.tracks * 2]:
        evs = tracks[key]
        start = evs[0]["ts"]
        names = collections.Counter(e.get("name") for e in evs)
        tot = collections.defaultdict(float)
        for e in evs:
            tot[e.get("name")] += e.get("dur", 0)
        print(f"== {key}: {len(evs)} events, span {spans[key]:.1f} us")
        for n, c in names.most_common(12):
            print(f"   {n}: {c} x, {tot[n]:.1f} us")
        for e in evs[:6] + [None] + evs[-8:]:
            if e is None:
                print("   ...")
                continue
            print(f"   {e['ts'] - start:9.2f} +{e.get('dur', 0):7.2f} {e.get('name')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
