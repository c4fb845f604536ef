"""Hashes of the generated code (PTX text and launch sidecar) of every example and test
kernel under several option sets: the proof that a refactor did not change code
generation.

    python3 scripts/codegen_hashes.py --out /tmp/before.json      # on the old commit
    python3 scripts/codegen_hashes.py --check /tmp/before.json    # on the new one

The kernels: examples/*.mlir, tests/data/*.mlir and tests/data/variants/*.mlir, the 24
instances of the attention template and the 8 GEMM tile configurations of
tests/test_tile_configs.py; each under the default options and ten variations (clusters,
four stages, no TMA stores, ...), and the examples also under the solver and auto
planners.
A kernel that fails to compile hashes its error message (so a new failure is a change).
`--check` compares the combinations of the old file; those added since (a new example or
test kernel) are listed as new.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

OPTION_SETS: dict[str, dict] = {
    "default": {},
    "no-persistent": {"persistent": False},
    "pingpong": {"pingpong": True},
    "no-coarse-pipeline": {"coarse_pipeline": False},
    "mma-depth-1": {"mma_depth": 1},
    "consumer-wg-1": {"consumer_warp_groups": 1},
    "stages-4": {"stages": 4},
    "no-tma-store": {"tma_store": False},
    "cluster-2x1": {"cluster": "2x1"},
    "cluster-1x2": {"cluster": "1x2"},
    "cluster-2x1-no-persistent": {"cluster": "2x1", "persistent": False},
}

#: Option sets run on the examples only (the solver takes seconds a kernel).
EXAMPLE_OPTION_SETS: dict[str, dict] = {
    "solver": {"schedule": "solver"},
    "solver-no-persistent": {"schedule": "solver", "persistent": False},
    "auto": {"schedule": "auto"},
}


def kernels() -> dict[str, str]:
    from test_gpu_attention_sweep import CASES, instantiate
    from test_tile_configs import CONFIGS, DTYPES, gemm_text

    out: dict[str, str] = {}
    files = [
        *sorted((ROOT / "examples").glob("*.mlir")),
        *sorted((ROOT / "tests/data").glob("*.mlir")),
        *sorted((ROOT / "tests/data/variants").glob("*.mlir")),
    ]
    for f in files:
        out[str(f.relative_to(ROOT))] = f.read_text()
    for bm, bn, d, causal in CASES:
        out[f"sweep/{bm}x{bn}-d{d}-{'causal' if causal else 'full'}"] = instantiate(
            bm, bn, d, causal
        )
    for cfg in CONFIGS:
        for dt in DTYPES:
            out[f"gemm/{cfg[0]}x{cfg[1]}x{cfg[2]}-{dt}"] = gemm_text(*cfg, dt)
    return out


def _one(job: tuple[str, str, str, bool]) -> tuple[str, str]:
    name, text, opt, ptx_only = job
    from tawac.driver import compile_module, parse_text
    from tawac.support.diagnostics import CompileError

    try:
        options = OPTION_SETS.get(opt, EXAMPLE_OPTION_SETS.get(opt))
        res = compile_module(parse_text(text, name.replace("/", "_")), **options)
        blob = res.ptx if ptx_only else res.ptx + "\n" + json.dumps(res.sidecar, sort_keys=True)
    except CompileError as e:
        blob = "error: " + str(e)
        print(f"{name} [{opt}]: {e}", file=sys.stderr)
    return f"{name} [{opt}]", hashlib.sha256(blob.encode()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the hashes to this JSON file")
    ap.add_argument("--check", help="compare with the hashes in this JSON file")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--ptx-only", action="store_true", help="hash the PTX alone (a change to the sidecar only)"
    )
    args = ap.parse_args()
    jobs = [(n, t, o, args.ptx_only) for n, t in kernels().items() for o in OPTION_SETS]
    jobs += [
        (n, t, o, args.ptx_only)
        for n, t in kernels().items()
        if n.startswith("examples/")
        for o in EXAMPLE_OPTION_SETS
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        hashes = dict(pool.map(_one, jobs, chunksize=4))
    print(f"{len(hashes)} kernel/option combinations")
    if args.out:
        Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if args.check:
        old = json.loads(Path(args.check).read_text())
        # Kernels added since the old file (new examples or test kernels) have nothing to
        # compare with: listed, not counted as changes.
        new = sorted(hashes.keys() - old.keys())
        changed = sorted(k for k in old if hashes.get(k) != old[k])
        for k in new:
            print(f"new: {k}")
        for k in changed:
            print(f"changed: {k}" if k in hashes else f"missing: {k}")
        same = f"{len(old)} of {len(old)} byte-identical"
        print(same if not changed else f"{len(changed)} changed")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
