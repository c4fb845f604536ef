"""GEMMs of the shapes a language model runs: decode (M 1 to 128) and ragged
sizes. `examples/gemm.mlir` runs under fixed tile parameter sets and through
`tawac.torch` with the shipped tuning table, against cuBLAS (`torch.mm`): same run,
round-robin, medians, with the bandwidth of reading B. Each result is checked against a
float32 reference first.

    python3 benchmarks/bench_gemm_shapes.py [--ms 1,16,64,128] [--rounds 5]
        [--configs 128x256x64,64x64x128/s4/d6,...]   # BLOCK_M x BLOCK_N x BLOCK_K,
                                              # /sS: split-K by S, /kS: stream-K (at
                                              # most S per tile), /dD: D stages, /wN:
                                              # N programs of x per tile (default 1:
                                              # the tile as named, not widened), /a1:
                                              # swap-AB (C^T = B A^T)
        [--shapes 3000x5000x2000,...]         # other shapes than --ms x the (N, K)s
        [--l2 dirty|clean]   # how the L2 is emptied before each timed call: dirty
                             # (default: triton's do_bench, a 256 MB memset, so the call
                             # also writes back up to 50 MB of dirty lines) or clean
                             # (256 MB read first: only the call's own traffic is timed)
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NK = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)]


def main() -> int:
    import torch

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import L2_MODES, round_robin, timer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ms", default="1,16,64,128")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--configs", default="128x256x64,64x64x64,64x32x64,64x32x128")
    ap.add_argument("--shapes", default="", help="MxNxK,... instead of --ms x the (N, K)s")
    ap.add_argument("--l2", choices=L2_MODES, default="dirty")
    ap.add_argument(
        "--splitk", default="", help="K chunk lengths (1024,2048): the split-K experiment "
        "(benchmarks/data/gemm_splitk_partial.mlir, partials summed by torch) too"
    )  # fmt: skip
    args = ap.parse_args()
    import json

    kernels = {}
    for cfg in args.configs.split(","):
        tiles, _, opts = cfg.partition("/")
        bm, bn, bk = (int(x) for x in tiles.split("x"))
        options = {"widen": 1}  # a fixed tile set is measured as named
        for item in (o for o in opts.split("/") if o):
            name, value = item[0], int(item[1:])
            key = {"s": "split_k", "k": "stream_k", "d": "stages", "w": "widen", "a": "swap_ab"}
            options[key[name]] = bool(value) if name == "a" else value
        built = compile_cached(
            ROOT / "examples/gemm.mlir",
            params={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
            **options,
        )
        kernels[cfg] = load_kernel(built.cubin, json.loads(built.sidecar_text))
    import tawac.torch

    table = tawac.torch.kernel(ROOT / "examples/gemm.mlir")  # with the shipped tuning table
    splits = {}
    for kc in (int(x) for x in args.splitk.split(",") if x):
        built = compile_cached(
            ROOT / "benchmarks/data/gemm_splitk_partial.mlir",
            params={"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "KC": kc},
        )
        splits[f"split-K {kc}"] = (kc, load_kernel(built.cubin, json.loads(built.sidecar_text)))
    names = [*kernels, *splits, "tawac.torch (table)", "cublas"]
    print(f"# GEMM shapes, bf16, {datetime.date.today()}, {torch.cuda.get_device_name(0)}; "
          f"us (TB/s of B); L2 emptied {args.l2} before each call")  # fmt: skip
    time = timer(args.l2)

    print("| M x N x K | " + " | ".join(names) + " | best tile set / cublas | table / cublas |")
    print("|---|" + "---:|" * (len(names) + 2))
    ratios: list[float] = []
    shapes = [tuple(int(x) for x in t.split("x")) for t in args.shapes.split(",") if t]
    shapes = shapes or [(int(m), n, k) for m in args.ms.split(",") for n, k in NK]
    for m, n, k in shapes:
        if True:
            torch.manual_seed(0)
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            ref = a.float() @ b.float().T
            calls = {}
            for cfg, kern in kernels.items():
                c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
                kern(a, b, c)
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                if not err < 1e-2:
                    print(f"{cfg} at {m}x{n}x{k}: wrong (max relative error {err})")
                    return 1
                calls[cfg] = lambda kern=kern, a=a, b=b, c=c: kern(a, b, c)
            for name, (kc, kern) in splits.items():
                w = torch.empty(-(-k // kc), m, n, device="cuda", dtype=torch.float32)
                c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

                def split(kern=kern, a=a, b=b, w=w, c=c):
                    kern(a, b, w)
                    c.copy_(w.sum(0))

                split()
                torch.cuda.synchronize()
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                if not err < 1e-2:
                    print(f"{name} at {m}x{n}x{k}: wrong (max relative error {err})")
                    return 1
                calls[name] = split
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            calls["cublas"] = lambda a=a, b=b, out=out: torch.mm(a, b.T, out=out)
            got = table(a, b)
            err = ((got.float() - ref).abs().max() / ref.abs().max()).item()
            if not err < 1e-2:
                print(f"tawac.torch at {m}x{n}x{k}: wrong (max relative error {err})")
                return 1
            calls["tawac.torch (table)"] = lambda a=a, b=b: table(a, b)
            samples = {s: [] for s in names}
            for i in round_robin(len(names), args.rounds):
                samples[names[i]].append(time(calls[names[i]], 10.0, 50.0))
            us = {s: 1000 * statistics.median(v) for s, v in samples.items()}
            tbs = {s: n * k * 2 / (us[s] * 1e-6) / 1e12 for s in names}
            best = min(us[s] for s in kernels)
            cells = [f"{us[s]:.1f} ({tbs[s]:.2f})" for s in names]
            ratio = us["cublas"] / us["tawac.torch (table)"]
            ratios.append(ratio)
            print(f"| {m}x{n}x{k} | " + " | ".join(cells) + f" | {us['cublas'] / best:.2f}x "
                  f"| {ratio:.2f}x |")  # fmt: skip
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"# tawac.torch (table) / cublas: geomean {geo:.2f}x, lowest {min(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("gemm_shapes", main))
