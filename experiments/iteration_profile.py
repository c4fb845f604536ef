"""Where an iteration's time goes, per track of a Chrome trace stamped on every iteration
(`tawac run --trace-every 1 --trace-out`, or an excerpt of one SM from
`experiments/trace_excerpt.py`): for each warp group, the innermost main loop's iterations
and, for each stamped op, its median start within the iteration and its median length,
in SM cycles.

    python3 experiments/iteration_profile.py trace.json [--ghz 1.755]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
from pathlib import Path


def profile(doc: dict, ghz: float) -> list[str]:
    """The report's lines (module docstring)."""
    events = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "i")]
    lines = []
    for tid in sorted({e["tid"] for e in events}):
        track = sorted((e for e in events if e["tid"] == tid), key=lambda e: e["ts"])
        spans = [
            e
            for e in track
            if e["name"].startswith("iteration loop") and not e["name"].endswith("end")
        ]
        if len(spans) < 2:
            continue
        loop = collections.Counter(e["name"] for e in spans).most_common(1)[0][0]
        spans = [e for e in spans if e["name"] == loop]
        cycles = 1e3 * ghz  # per microsecond
        offsets: dict[tuple[str, int], list[tuple[float, float]]] = collections.defaultdict(list)
        lengths = []
        for a, b in zip(spans, spans[1:], strict=False):
            lengths.append((b["ts"] - a["ts"]) * cycles)
            seen: collections.Counter[str] = collections.Counter()
            for e in track:
                if not a["ts"] <= e["ts"] < b["ts"] or e["name"].startswith("iteration"):
                    continue
                key = (e["name"], seen[e["name"]])
                seen[e["name"]] += 1
                offsets[key].append(((e["ts"] - a["ts"]) * cycles, e.get("dur", 0) * cycles))
        median = statistics.median(lengths)
        lines.append(f"track {tid} {loop}: {len(lengths)} iterations, median {median:.0f} cycles")
        rows = sorted(offsets.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))
        for (name, n), xs in rows:
            if len(xs) < len(lengths) // 2:
                continue
            start = statistics.median(x[0] for x in xs)
            length = statistics.median(x[1] for x in xs)
            lines.append(f"   {name:18s}#{n} start {start:6.0f} dur {length:6.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--ghz", type=float, default=1.755, help="SM clock for cycles")
    args = ap.parse_args(argv)
    print("\n".join(profile(json.loads(Path(args.trace).read_text()), args.ghz)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
