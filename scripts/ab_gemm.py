"""A/B timing of GEMM variants (kernel parameters and compile options) against cuBLAS,
round-robin in one process, so that the machine's drift (clocks, power, neighbours)
falls on every variant alike.

    python3 scripts/ab_gemm.py base stages=4 'stages=4,mma_depth=1' \\
        'BLOCK_M=256,BLOCK_N=128' --shapes 4096x4096x4096,8192x8192x8192 --rounds 5

Each variant is a comma-separated list of `NAME=VALUE`: upper-case names are kernel
parameters of examples/gemm.mlir (or --kernel), lower-case ones compile options
(values as JSON: `cluster=2x1`, `persistent=false`); `base` is the default. Every
variant is checked against a float32 reference first. The table gives TFLOP/s, the
median of --rounds rounds of triton's do_bench (each round times every variant and
cuBLAS once, in a rotated order), and each variant's ratio to cuBLAS.
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

from tawac.driver import compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402


def parse_variant(text: str) -> tuple[dict, dict]:
    """(kernel parameters, compile options) of a variant's text."""
    params: dict = {}
    options: dict = {}
    if text == "base":
        return params, options
    for item in text.split(","):
        key, _, value = item.partition("=")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        (params if key.isupper() else options)[key] = parsed
    return params, options


def _shape_row(shape: str, kernels, names, rounds: int, rep_ms: float, do_bench) -> bool:
    """Checks and times every kernel and cuBLAS at one MxNxK; prints the row."""
    m, n, k = (int(x) for x in shape.split("x"))
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ b.float().T
    ok = True
    calls = []
    for name, kern in zip(names, kernels, strict=False):
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        kern(a, b, c)
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            ok = False
            print(f"{shape}: variant {name} relative error {err:.3e}")
        calls.append(lambda kern=kern, c=c: kern(a, b, c))
    del ref
    cb = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    calls.append(lambda: torch.matmul(a, b.T, out=cb))
    times: list[list[float]] = [[] for _ in calls]
    for r in range(rounds):
        order = list(range(len(calls)))
        order = order[r % len(order) :] + order[: r % len(order)]
        for i in order:
            times[i].append(do_bench(calls[i], warmup=10, rep=rep_ms))
    flops = 2 * m * n * k
    tf = [flops / statistics.median(t) / 1e9 for t in times]
    cells = [f"{x:.0f} ({x / tf[-1]:.3f})" for x in tf[:-1]] + [f"{tf[-1]:.0f}"]
    print(shape.rjust(17), *(c.rjust(26) for c in cells))
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("variants", nargs="+")
    p.add_argument("--kernel", type=Path, default=ROOT / "examples" / "gemm.mlir")
    p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--rep-ms", type=float, default=60.0)
    args = p.parse_args()
    from triton.testing import do_bench

    kernels = []
    for v in args.variants:
        params, options = parse_variant(v)
        r = compile_file(args.kernel, params=params or None, **options)
        kernels.append(load_kernel(r.cubin, r.sidecar))
    names = [*args.variants, "cuBLAS"]
    print(f"{torch.cuda.get_device_name()}; TFLOP/s, median of {args.rounds} rounds")
    print("shape".rjust(17), *(n[:24].rjust(26) for n in names))
    ok = True
    for shape in args.shapes.split(","):
        ok &= _shape_row(shape, kernels, names, args.rounds, args.rep_ms, do_bench)
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
