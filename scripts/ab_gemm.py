"""A/B timing of GEMM variants (kernel parameters and compile options) against cuBLAS,
round-robin in one process, so that the machine's drift (clocks, power, neighbours)
falls on every variant alike.

    python3 scripts/ab_gemm.py base stages=4 'stages=4,mma-depth=1' \\
        'BLOCK_M=256,BLOCK_N=128' --shapes 4096x4096x4096,8192x8192x8192 --rounds 5

Each variant is a comma-separated list of `NAME=VALUE`: upper-case names are kernel
parameters of examples/gemm.mlir (or --kernel), lower-case ones pipeline knobs
(`cluster=2x1`, `persistent=false`, `mma-depth=1`: tawac.support.options.KNOBS); `base` is the
default. The shapes go through benchmarks/bench_gemm.py's `bench_shape`: every variant
is checked against a float32 reference, then all of them and cuBLAS are timed --rounds
times round-robin.
The table gives each one's median TFLOP/s and, for the variants, the ratio to cuBLAS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gemm import TOL, bench_shape, compile_tawac, parse_opts, parse_shapes  # noqa: E402


def parse_variant(text: str) -> tuple[dict, dict]:
    """(kernel parameters, compile options) of a variant's text."""
    if text == "base":
        return {}, {}
    items = parse_opts(text.split(","))
    params = {k: v for k, v in items.items() if k.isupper()}
    return params, {k: v for k, v in items.items() if not k.isupper()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("variants", nargs="+")
    p.add_argument("--kernel", type=Path, default=ROOT / "examples" / "gemm.mlir")
    p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep-ms", type=float, default=60.0)
    args = p.parse_args()

    kernels = {}
    for v in args.variants:
        params, options = parse_variant(v)
        kernels[v] = compile_tawac(args.kernel, {**options, "params": params or None})
    print(f"{torch.cuda.get_device_name()}; TFLOP/s, median of {args.rounds} rounds")
    print("shape".rjust(17), *(n[:24].rjust(26) for n in [*args.variants, "cuBLAS"]))
    ok = True
    for shape in parse_shapes(args.shapes):
        row = bench_shape(shape, kernels, {}, (10.0, args.rep_ms), args.rounds)
        blas = row.tflops.get("cublas")
        cells = []
        for v in args.variants:
            tf, err = row.tflops.get(v), row.rel_err.get(v, float("inf"))
            if tf is None or not err <= TOL:
                ok = False
                cells.append(f"error ({row.errors.get(v, f'rel. err {err:.1e}')})"[:26])
                continue
            cells.append(f"{tf:.0f} ({tf / blas:.3f})" if blas else f"{tf:.0f}")
        cells.append(f"{blas:.0f}" if blas else "error")
        print("x".join(map(str, shape)).rjust(17), *(c.rjust(26) for c in cells))
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
