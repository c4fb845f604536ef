"""A/B timing of attention kernels written differently (e.g. other block sizes) or of
hand-edited PTX (what ptxas does with a code-generation idea, before it goes into a pass).

    python3 scripts/ab_attention.py examples/attention_d64.mlir my_variant.mlir [--causal]
    python3 scripts/ab_attention.py base.ptx edited.ptx [--head-dim 128] [--rounds 7]

A `.mlir` file is compiled with the default pipeline; a `.ptx` file is assembled with the
same ptxas and launched with the `.json` sidecar beside it (as `tawac compile -o x.ptx`
writes it), so it must keep the kernel's name and parameters. Each kernel is checked
against SDPA (relative error printed) and the kernels are timed round-robin at seq
1k/4k/16k: the median of `--rounds` rounds of triton's do_bench. Inputs are in each
kernel's own element type (bf16 or f16, from its sidecar), the same random values.
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
    p.add_argument("files", nargs="+")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--seqs", default="1024,4096,16384")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--head-dim", type=int, default=128, help="of the .ptx files")
    args = p.parse_args()
    from triton.testing import do_bench

    kernels = [_load(f, args.head_dim) for f in args.files]
    print("seq".rjust(6), *(Path(f).name[:22].rjust(24) for f in args.files))
    for s in (int(x) for x in args.seqs.split(",")):
        calls, errs = [], []
        for kern, d in kernels:
            h = 16 if d == 128 else 32
            b = max(1, 32768 // s)
            torch.manual_seed(0)
            q, k, v = (torch.randn(b, h, s, d, device="cuda").to(_dtype(kern)) for _ in range(3))
            o = torch.full_like(q, float("nan"))
            a = (q, k, v, o, d**-0.5 * LOG2E)
            kern(*a)
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
            errs.append(((o.float() - ref.float()).norm() / ref.float().norm()).item())
            flops = 4 * b * h * s * s * d // (2 if args.causal else 1)
            calls.append((flops, lambda kern=kern, a=a: kern(*a)))
        times: list[list[float]] = [[] for _ in calls]
        for _ in range(args.rounds):
            for i, (_, call) in enumerate(calls):
                times[i].append(do_bench(call, rep=40))
        row = [
            f"{flops / statistics.median(t) / 1e9:6.0f} ({e:.0e})"
            for (flops, _), t, e in zip(calls, times, errs, strict=True)
        ]
        print(str(s).rjust(6), *(x.rjust(24) for x in row))


def _dtype(kern) -> torch.dtype:
    """The element type of the kernel's first tensor argument (bf16 or f16)."""
    first = next(a for a in kern.sidecar["args"] if a["kind"] == "tensor")
    return {"bf16": torch.bfloat16, "f16": torch.float16}[first["dtype"]]


def _load(path: str, head_dim: int):
    """(kernel, head dim) of a .mlir file (compiled) or a .ptx file (assembled, with its
    sidecar)."""
    f = Path(path)
    if f.suffix != ".ptx":
        r = compile_file(f)
        return load_kernel(r.cubin, r.sidecar), _head_dim(r.kernel)
    side = f.with_suffix(".json")
    if not side.exists():
        raise SystemExit(f"{f}: no sidecar {side} beside it (write both with tawac compile)")
    return load_kernel(assemble(f.read_text())[0], json.loads(side.read_text())), head_dim


def _head_dim(kernel) -> int:
    """The head dim of an attention program: the last dimension of its first loaded tile."""
    from tawac.dialects import tile

    load = next(op for op in kernel.walk() if isinstance(op, tile.LoadOp))
    return load.result.type.get_shape()[-1]


if __name__ == "__main__":
    main()
