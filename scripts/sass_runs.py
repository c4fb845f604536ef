"""The consumer's instruction mix in a kernel's SASS as runs in issue order: how many
`HGMMA`s, `MUFU.EX2`s and barrier waits follow each other, to see whether ptxas spread a
softmax's exponentials between an MMA's wgmma instructions (docs/perf/2026-11-26.md,
"Which schedules ptxas interleaves"). Compiles a corpus program under each planner
configuration (needs ptxas and cuobjdump: the `ptxas` extra's wheel has both).

    python3 scripts/sass_runs.py attention_d64_128x64 [--planners heuristic,solver]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The SASS instructions counted, each as the name it is shown by.
_KINDS = [
    (re.compile(r"\bHGMMA\.(\d+x\d+x\d+)"), "HGMMA.{}"),
    (re.compile(r"\bMUFU\.EX2\b"), "EX2"),
    (re.compile(r"\bSYNCS\.PHASECHK"), "WAIT"),
    (re.compile(r"\bWARPGROUP\.DEPBAR"), "DEPBAR"),
]


def runs(sass: str) -> list[tuple[str, int]]:
    """(name, count) of consecutive counted instructions, in the order of the listing."""
    out: list[tuple[str, int]] = []
    for line in sass.splitlines():
        for pattern, name in _KINDS:
            m = pattern.search(line)
            if m is None:
                continue
            label = name.format(*m.groups())
            if out and out[-1][0] == label:
                out[-1] = (label, out[-1][1] + 1)
            else:
                out.append((label, 1))
            break
    return out


def cuobjdump() -> str:
    """cuobjdump: beside ptxas, on PATH, or in an NVIDIA CUDA wheel (`nvidia/*/bin`)."""
    from tawac.support.ptxas import find_ptxas

    beside = Path(find_ptxas()).resolve().with_name("cuobjdump")
    if beside.exists():
        return str(beside)
    found = shutil.which("cuobjdump")
    if found is not None:
        return found
    try:
        import nvidia  # the CUDA wheels' namespace package

        wheels = [p for root in nvidia.__path__ for p in Path(root).glob("*/bin/cuobjdump")]
    except ImportError:
        wheels = []
    if not wheels:
        raise SystemExit("sass_runs: no cuobjdump (install tawac[ptxas] or the CUDA toolkit)")
    return str(sorted(wheels)[-1])


def main() -> None:
    from tawac.driver import compile_cached
    from tawac.tools.calibrate import parse_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program", help="a corpus program's name")
    ap.add_argument("--planners", default="heuristic,solver")
    args = ap.parse_args()
    corpus = json.loads((ROOT / "corpus" / "corpus.json").read_text())["programs"]
    entry = next((e for e in corpus if e["name"] == args.program), None)
    if entry is None:
        raise SystemExit(f"sass_runs: no corpus program {args.program!r}")
    tool = cuobjdump()
    for config in args.planners.split(","):
        planner, fields = parse_config(config)
        built = compile_cached(
            ROOT / entry["source"],
            params=entry.get("defines") or None,
            cubin=True,
            schedule=planner,
            **fields,
        )
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(built.cubin)
            f.flush()
            sass = subprocess.run(
                [tool, "-sass", f.name], capture_output=True, text=True, check=True
            ).stdout
        text = ", ".join(f"{n} {name}" for name, n in runs(sass))
        print(f"{args.program} {config}: {text}")


if __name__ == "__main__":
    main()
