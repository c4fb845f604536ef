"""A/B timing of attention kernels written differently (e.g. other block sizes): each
.mlir file is compiled with the default pipeline and timed at seq 1k/4k/16k on the same
inputs, after a correctness check against SDPA.

    python3 scripts/ab_attention.py examples/attention_d64.mlir my_variant.mlir [--causal]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.driver import compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402

LOG2E = 1.4426950408889634


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("files", nargs="+")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seqs", default="1024,4096,16384")
    args = p.parse_args()
    from triton.testing import do_bench

    kernels = []
    for f in args.files:
        r = compile_file(f)
        kernels.append((load_kernel(r.cubin, r.sidecar), _head_dim(r.kernel)))
    print("seq".rjust(6), *(Path(f).name[:28].rjust(30) for f in args.files))
    for s in (int(x) for x in args.seqs.split(",")):
        row = []
        for kern, d in kernels:
            h = 16 if d == 128 else 32
            b = max(1, 32768 // s)
            torch.manual_seed(0)
            q, k, v = (
                torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)
            )
            o = torch.full_like(q, float("nan"))
            a = (q, k, v, o, d**-0.5 * LOG2E)
            kern(*a)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
            err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
            flops = 4 * b * h * s * s * d // (2 if args.causal else 1)
            tf = flops / do_bench(lambda kern=kern, a=a: kern(*a), rep=50) / 1e9
            row.append(f"{tf:7.0f} (err {err:.0e})")
        print(str(s).rjust(6), *(x.rjust(30) for x in row))


def _head_dim(kernel) -> int:
    """The head dim of an attention program: the last dimension of its first loaded tile."""
    from tawac.dialects import tile

    load = next(op for op in kernel.walk() if isinstance(op, tile.LoadOp))
    return load.result.type.get_shape()[-1]


if __name__ == "__main__":
    main()
