"""Which rows of a row kernel in the blocked layout (16 rows a program) come out wrong:
`examples/softmax.mlir` at 4096 x 32768 with 16 and 32 ring slots, persistent or not,
under the heuristic, at 2048 rows, against the 64-row default and the 16-row RMS norm;
three launches each, every element checked against float32 torch (a row is wrong where
an element is off by more than 5%), the first wrong row's columns printed.

    python3 experiments/exp_blocked_softmax_race.py      # on the GPU machine (.whl carried)

It ran on an NVIDIA H200 on 2026-12-06 (docs/perf/2026-12-06.md, "Row kernels: ring depth
and widening"; raw log docs/perf/data/blocked-softmax-race-h200-2026-12-06.log). The
cause was found the same day (a slot released before the warp's reads of it were
performed; fixed by a proxy fence, docs/design/backend.md), and the forms compile again:
a rerun now finds every row right.
"""

from pathlib import Path

import torch

import tawac.torch

E = Path("examples")
torch.manual_seed(0)


def ref_of(kernel, x, w):
    xf = x.float()
    if kernel == "softmax":
        return torch.softmax(xf, -1)
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()


CASES = [
    ("softmax", 4096, 32768, 16, 16, {}),
    ("softmax", 4096, 32768, 16, 32, {}),
    ("softmax", 4096, 32768, 16, 32, {"persistent": False}),
    ("softmax", 4096, 32768, 16, 32, {"schedule": "heuristic"}),
    ("softmax", 2048, 32768, 16, 32, {}),
    ("softmax", 4096, 32768, 64, 8, {}),
    ("rmsnorm", 4096, 32768, 16, 32, {}),
]
data = {}
for kernel, m, n, bm, s, opts in CASES:
    if (kernel, m, n) not in data:
        x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(torch.bfloat16)
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        data[(kernel, m, n)] = (x, w, ref_of(kernel, x, w))
    x, w, ref = data[(kernel, m, n)]
    params = {"BLOCK_N": 128, "BLOCK_M": bm}
    k = tawac.torch.kernel(E / f"{kernel}.mlir", params=params, stages=s, **opts)
    y = torch.empty_like(x)
    out = []
    for _ in range(3):
        y.fill_(float("nan"))
        k(x, y) if kernel == "softmax" else k(x, w, y, 1e-5)
        torch.cuda.synchronize()
        err = ((y.float() - ref).abs() / (ref.abs() + 1e-3)).amax(-1)
        rel = float((y.float() - ref).norm() / ref.norm())
        bad = (err > 0.05) | y.float().isnan().any(-1)
        rows = bad.nonzero().flatten().tolist()
        out.append(f"rel={rel:.4f} bad={len(rows)} {rows[:5]}")
    print(kernel, m, n, f"m{bm} s{s}", opts, " | ".join(out), flush=True)
    if rows:
        r = rows[0]
        d = (y[r].float() - ref[r]).abs() / (ref[r].abs() + 1e-3)
        cols = (d > 0.05).nonzero().flatten()
        ratio = (y[r, cols[:6]].float() / ref[r, cols[:6]]).tolist()
        print("   row", r, "bad cols", cols.numel(), cols[:8].tolist(), cols[-4:].tolist(),
              "y/ref", [round(v, 4) for v in ratio], flush=True)  # fmt: skip
