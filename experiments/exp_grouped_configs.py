"""Issue 22: the grouped GEMM's configurations at the sizes where it trails
`torch._grouped_mm` (64 experts, few tokens each: a stream of the experts' weights).
Each configuration of `examples/gemm_grouped.mlir` (BLOCK_M, BLOCK_N, BLOCK_K, options)
timed round-robin against `torch._grouped_mm`, its output checked first; the weights'
read rate (bytes of W / time) printed next to each.

    python3 experiments/exp_grouped_configs.py [--tokens 4096] [--nk 14336x4096,4096x4096]
        [--configs 64x256x64,128x256x64,64x128x128:stages=6]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def parse_config(text: str) -> tuple[dict, dict]:
    shape, _, rest = text.partition(":")
    bm, bn, bk = (int(x) for x in shape.split("x"))
    options = {}
    for item in filter(None, rest.split(",")):
        k, v = item.split("=")
        options[k] = int(v) if v.isdigit() else v
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, options


def main() -> int:
    import torch
    from bench_gemm_grouped import aligned, medians, route

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    ap = argparse.ArgumentParser()
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--tokens", default="4096")
    ap.add_argument("--nk", default="14336x4096,4096x4096")
    ap.add_argument("--configs", default="64x256x64,128x256x64")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    kernels = {}
    for c in args.configs.split(","):
        params, options = parse_config(c)
        built = compile_cached(ROOT / "examples" / "gemm_grouped.mlir", params=params, **options)
        kernels[c] = (params["BLOCK_M"], load_kernel(built.cubin, json.loads(built.sidecar_text)))
    print(f"# grouped GEMM configurations, {torch.cuda.get_device_name(0)}; ms (TB/s of W)")
    for tokens in (int(t) for t in args.tokens.split(",")):
        for nk in args.nk.split(","):
            n, k = (int(x) for x in nk.split("x"))
            e = args.experts
            counts = route(tokens, e, e * tokens + n)
            torch.manual_seed(0)
            a = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16) * 0.1
            offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
            ref = torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)
            calls = {"grouped_mm": lambda a=a, w=w, offs=offs: torch._grouped_mm(
                a, w.transpose(-2, -1), offs=offs)}  # fmt: skip
            for name, (bm, kern) in kernels.items():
                a_pad, ids, starts, pstarts = aligned(a, counts, bm)
                c = torch.full(
                    (a_pad.shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16
                )
                kern(a_pad, w, ids, c)
                torch.cuda.synchronize()
                worst = 0.0
                for x in range(e):
                    m = int(counts[x])
                    if not m:
                        continue
                    got = c[int(pstarts[x]) : int(pstarts[x]) + m].float()
                    want = ref[int(starts[x]) : int(starts[x]) + m].float()
                    worst = max(worst, ((got - want).norm() / want.norm()).item())
                if not worst < 1e-2:
                    print(f"{name}: wrong ({worst})")
                    return 1
                calls[name] = lambda kern=kern, a_pad=a_pad, w=w, ids=ids, c=c: kern(
                    a_pad, w, ids, c
                )
            ms = medians(calls, list(calls), args.rounds)
            wbytes = w.numel() * 2
            cells = ", ".join(f"{s} {ms[s]:.3f} ({wbytes / ms[s] / 1e9:.2f})" for s in calls)
            best = min((s for s in calls if s != "grouped_mm"), key=lambda s: ms[s])
            print(f"E={e} T={tokens} {n}x{k}: {cells}; best {best} "
                  f"{ms['grouped_mm'] / ms[best]:.3f}x grouped_mm")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
