"""A/B timing of hand-edited PTX of one attention example: a tool for finding out what
ptxas does with a code-generation idea before building it into a pass.

    python3 scripts/ab_ptx.py examples/attention.mlir base.ptx variant1.ptx ... [--causal]

Compiles the example (for its launch sidecar), assembles every PTX file with the same
ptxas, checks each against SDPA (rel. error printed) and times them round-robin at seq
1k/4k/16k (median of 5 rounds of triton's do_bench).  The PTX files must keep the
kernel's name and parameters; a `.json` sidecar beside a PTX file (as `tawac compile -o
x.ptx` writes it) is used for that file's launch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.driver import assemble, compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402

LOG2E = 1.4426950408889634


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("example")
    p.add_argument("ptx", nargs="+")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seqs", default="1024,4096,16384")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    from triton.testing import do_bench

    r = compile_file(args.example)
    d = 64 if "d64" in Path(args.example).name else 128
    kernels = [
        load_kernel(assemble(Path(f).read_text())[0], _sidecar(f, r.sidecar)) for f in args.ptx
    ]
    print("seq".rjust(6), *(Path(f).name[:22].rjust(24) for f in args.ptx))
    for s in (int(x) for x in args.seqs.split(",")):
        h = 16 if d == 128 else 32
        b = max(1, 32768 // s)
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
        flops = 4 * b * h * s * s * d // (2 if args.causal else 1)
        errs, times = [], [[] for _ in kernels]
        outs = []
        for kern in kernels:
            o = torch.full_like(q, float("nan"))
            kern(q, k, v, o, d**-0.5 * LOG2E)
            outs.append(o)
            errs.append(((o.float() - ref.float()).norm() / ref.float().norm()).item())
        for _ in range(args.rounds):
            for i, kern in enumerate(kernels):
                a = (q, k, v, outs[i], d**-0.5 * LOG2E)
                times[i].append(do_bench(lambda kern=kern, a=a: kern(*a), rep=40))
        row = [
            f"{flops / statistics.median(t) / 1e9:6.0f} ({e:.0e})"
            for t, e in zip(times, errs, strict=True)
        ]
        print(str(s).rjust(6), *(x.rjust(24) for x in row))


def _sidecar(ptx: str, default: dict) -> dict:
    """The launch sidecar written beside a PTX file by `tawac compile` (same stem), else the
    example's: a kernel planned differently may need other shared memory or threads."""
    side = Path(ptx).with_suffix(".json")
    return json.loads(side.read_text()) if side.exists() else default


if __name__ == "__main__":
    main()
