"""One SM's tracks of a Chrome trace (`tawac run --trace-out`), small enough to keep in
the repository (docs/data) and to read with `tawac explain --measured`:

    python3 experiments/trace_excerpt.py full.trace.json -o excerpt.trace.json [--sm N]

The SM: `--sm`, else the one `tawac.runtime.trace.measured_window` picks (the consumer track with
the most iterations of the innermost main loop).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from tawac.runtime.trace import measured_window

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--sm", type=int, default=None)
    args = ap.parse_args(argv)
    doc = json.loads(Path(args.trace).read_text())
    sm = args.sm if args.sm is not None else measured_window(doc).sm
    events = [e for e in doc["traceEvents"] if e.get("pid") == sm]
    out = {**doc, "traceEvents": events}
    out["otherData"] = {**doc.get("otherData", {}), "excerpt": f"SM {sm}"}
    Path(args.output).write_text(json.dumps(out))
    print(f"SM {sm}: {len(events)} of {len(doc['traceEvents'])} events -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
