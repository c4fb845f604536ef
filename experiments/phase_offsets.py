"""How far apart a CTA's consumer warp groups run: from a sampled trace (`tawac run
--trace-every N --trace-out`), per CTA, the median over iterations of the difference
between the second consumer warp group's iteration tick and the first's, as a fraction
of the loop's interval (0: in phase; 0.5: half an iteration apart).

    python3 experiments/phase_offsets.py trace.json
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path


def offsets(doc: dict) -> list[float]:
    """Per (SM, CTA), the median phase of warp group 2 behind warp group 1."""
    ticks: dict[tuple, dict[int, list[tuple[int, float]]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for e in doc["traceEvents"]:
        name = e.get("name", "")
        if e.get("ph") not in ("X", "i") or not name.startswith("iteration"):
            continue
        a = e.get("args", {})
        if "iteration" not in a:
            continue
        ticks[(e["pid"], a.get("cta"), name)][e["tid"]].append((a["iteration"], e["ts"]))
    out = []
    for tracks in ticks.values():
        if 1 not in tracks or 2 not in tracks:
            continue
        one, two = dict(tracks[1]), dict(tracks[2])
        common = sorted(set(one) & set(two))
        if len(common) < 3:
            continue
        steps = [(one[b] - one[a]) / (b - a) for a, b in zip(common, common[1:], strict=False)]
        period = statistics.median(steps)
        if period <= 0:
            continue
        phase = [((two[i] - one[i]) / period) % 1.0 for i in common]
        out.append(statistics.median(phase))
    return out


def main() -> int:
    got = offsets(json.loads(Path(sys.argv[1]).read_text()))
    if not got:
        print("no CTA with two consumer warp groups' iteration ticks")
        return 1
    q = statistics.quantiles(got, n=4) if len(got) > 3 else got
    print(f"{len(got)} CTAs: phase of wg2 behind wg1, median {statistics.median(got):.2f}, "
          f"quartiles {', '.join(f'{x:.2f}' for x in q)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
