"""Issue 22: where the unpadded (offsets) grouped GEMM loses time against the padded one
at 64 experts and 32768 tokens. Times, round-robin: the padded kernel, the offsets kernel,
and a variant of the offsets kernel whose experts' last blocks also leave through TMA
(`experiments/data/grouped_offsets_tma_only.mlir`: wrong rows past each expert's end, timing
only), at the tiles given.

    python3 experiments/exp_grouped_offsets.py [--experts 64] [--tokens 32768] [--nk 14336x4096]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    import torch
    from bench_gemm_grouped import aligned, blocks_of, medians, route

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    ap = argparse.ArgumentParser()
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--nk", default="14336x4096")
    ap.add_argument("--block-n", default="256,128")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    sources = {
        "padded": ROOT / "examples" / "gemm_grouped.mlir",
        "offsets": ROOT / "examples" / "gemm_grouped_offsets.mlir",
        "offsets, TMA only": ROOT / "experiments" / "data" / "grouped_offsets_tma_only.mlir",
    }
    n, k = (int(x) for x in args.nk.split("x"))
    e, tokens = args.experts, args.tokens
    counts = route(tokens, e, e * tokens + n)
    torch.manual_seed(0)
    a = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(e, n, k, device="cuda", dtype=torch.bfloat16) * 0.1
    calls = {}
    for bn in (int(x) for x in args.block_n.split(",")):
        params = {"BLOCK_M": 128, "BLOCK_N": bn}
        for name, src in sources.items():
            built = compile_cached(src, params=params)
            kern = load_kernel(built.cubin, json.loads(built.sidecar_text))
            if name == "padded":
                a_pad, ids, _, _ = aligned(a, counts, 128)
                c = torch.empty(a_pad.shape[0], n, device="cuda", dtype=a.dtype)
                calls[f"{name} 128x{bn}"] = lambda f=kern, x=a_pad, ids=ids, c=c: f(x, w, ids, c)
            else:
                blk = blocks_of(counts, 128, a.device)
                c = torch.empty(tokens, n, device="cuda", dtype=a.dtype)
                calls[f"{name} 128x{bn}"] = lambda f=kern, blk=blk, c=c: f(a, w, *blk, c)
    for f in calls.values():
        f()
    torch.cuda.synchronize()
    ms = medians(calls, list(calls), args.rounds)
    print(f"# E={e} T={tokens} {n}x{k}, {torch.cuda.get_device_name(0)}; ms")
    for name, t in ms.items():
        print(f"{name}: {t:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
