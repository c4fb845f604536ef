"""Launches of one GEMM for a profiler (ncu), between cudaProfilerStart and Stop:

    ncu --profile-from-start off --clock-control none --section SpeedOfLight \\
        python3 scripts/profile_gemm.py tawac 4096x4096x4096 [-D NAME=V ...] [--opt key=value ...]
    ncu --profile-from-start off ... python3 scripts/profile_gemm.py cublas 4096x4096x4096

`tawac` compiles examples/gemm.mlir (or --kernel) with the given parameters and options;
`cublas` runs torch.matmul on the same bf16 operands (C = A B^T). Two launches run before
the profiled range (warm caches and clocks), --launches inside it (default 1).
"""

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gemm import parse_opts  # noqa: E402

from tawac.support.params import parse_defines  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("impl", choices=("tawac", "cublas"))
    p.add_argument("shape", help="MxNxK")
    p.add_argument("--kernel", type=Path, default=ROOT / "examples" / "gemm.mlir")
    p.add_argument("-D", dest="defines", action="append", default=[])
    p.add_argument("--opt", action="append", default=[])
    p.add_argument("--launches", type=int, default=1)
    args = p.parse_args()
    m, n, k = (int(x) for x in args.shape.split("x"))
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    if args.impl == "tawac":
        from tawac.driver import compile_file
        from tawac.runtime import load_kernel

        art = compile_file(
            args.kernel, params=parse_defines(args.defines) or None, **parse_opts(args.opt)
        )
        kern = load_kernel(art.cubin, art.sidecar)

        def run():
            kern(a, b, c)
    else:

        def run():
            torch.matmul(a, b.t(), out=c)

    for _ in range(2):
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(args.launches):
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
