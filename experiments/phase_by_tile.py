"""How far the second consumer warp group runs ahead of the first, tile by tile, from a
sampled trace (`tawac run --trace-every N --trace-out`): per SM, each tile's key loop
(its iteration count restarts), the difference of the two groups' stamps of the same
iteration, in iterations (negative: the second group ahead). Prints, for the k-th tile
an SM runs, the quartiles over the SMs: is a lead there from the first tile, or does
it build up from tile to tile? (issue 20, docs/perf.md 2026-11-27)

    python3 experiments/phase_by_tile.py trace.json [--tiles 6] [--within 6]

`--within N`: also the offset at each of the first tile's last N stamps and the second
tile's first N (medians over the SMs): where in the first tile the lead appears.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
from pathlib import Path


def tiles_of(events: list[dict]) -> list[list[tuple[int, float]]]:
    """One track's iteration stamps (iteration, ts), split where the iteration restarts."""
    out: list[list[tuple[int, float]]] = []
    for e in sorted(events, key=lambda e: e["ts"]):
        it = e["args"]["iteration"]
        if not out or it <= out[-1][-1][0]:
            out.append([])
        out[-1].append((it, e["ts"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--tiles", type=int, default=6)
    ap.add_argument("--within", type=int, default=0)
    args = ap.parse_args()
    doc = json.loads(Path(args.trace).read_text())
    tracks: dict[tuple, list[dict]] = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        a = e.get("args", {})
        stamp = e.get("ph") in ("X", "i") and e.get("name", "").startswith("iteration")
        if stamp and "iteration" in a:
            tracks[(e["pid"], e["name"], e["tid"])].append(e)
    by_k: dict[int, list[float]] = collections.defaultdict(list)
    within: dict[tuple[int, int], list[float]] = collections.defaultdict(list)
    for (pid, name, tid), evs in tracks.items():
        if tid != 1 or (pid, name, 2) not in tracks:
            continue
        one, two = tiles_of(evs), tiles_of(tracks[(pid, name, 2)])
        for k, (a, b) in enumerate(zip(one, two, strict=False)):
            da, db = dict(a), dict(b)
            common = sorted(set(da) & set(db))
            if len(common) < 2:
                continue
            period = (da[common[-1]] - da[common[0]]) / (common[-1] - common[0])
            if period <= 0:
                continue
            first = common[0]
            by_k[k].append((db[first] - da[first]) / period)
            if k < 2 and args.within:
                picked = common[-args.within :] if k == 0 else common[: args.within]
                for pos, it in enumerate(picked):
                    key = (k, pos - len(picked) if k == 0 else pos)
                    within[key].append((db[it] - da[it]) / period)
    for k in sorted(by_k)[: args.tiles]:
        v = by_k[k]
        q = statistics.quantiles(v, n=4) if len(v) > 3 else v
        print(f"tile {k}: {len(v)} SMs, second - first at the first stamp (iterations): "
              f"quartiles {', '.join(f'{x:+.2f}' for x in q)}")  # fmt: skip
    for (k, pos), v in sorted(within.items()):
        where = f"tile 0, stamp {pos} from the end" if k == 0 else f"tile 1, stamp {pos}"
        print(f"{where}: median {statistics.median(v):+.2f} iterations over {len(v)} SMs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
