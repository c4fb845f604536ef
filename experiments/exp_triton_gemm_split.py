"""Experiment: the Triton tutorial's matmul (`examples/triton/matmul.py`, 128x256x64
blocks as written) at sizes whose tiles do not fill the GPU (M of a decode or small
prefill batch), compiled by Triton and by `tawac.triton` with split-K 1, 2, 4, 8, against
cuBLAS (`torch.mm`). Same run, round-robin medians (us); results checked first.

    python3 experiments/exp_triton_gemm_split.py [--splits 1,2,4,8] [--shapes 128x4096x4096,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    import torch

    import tawac.triton
    from tawac.runtime.runner import bench_ms, round_robin

    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", default="1,2,4,8")
    ap.add_argument(
        "--shapes",
        default="128x4096x4096,128x4096x14336,128x14336x4096,512x4096x4096,512x4096x14336",
    )
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("mm", ROOT / "examples/triton/matmul.py")
    assert spec is not None and spec.loader is not None
    src = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(src)
    cfg = src.TTIR
    consts = cfg["constexprs"]
    splits = [int(s) for s in args.splits.split(",")]
    print(f"# tutorial matmul, fp16, split-K through tawac.triton, {torch.cuda.get_device_name(0)}")
    cols = ["triton", "cublas", *(f"split {s}" for s in splits)]
    print("| M x N x K | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        grid = (-(-m // consts["BLOCK_SIZE_M"]) * -(-n // consts["BLOCK_SIZE_N"]),)

        def triton(c, a=a, b=b, m=m, n=n, k=k, grid=grid):
            strides = (*a.stride(), *b.stride(), *c.stride())
            cfg["kernel"][grid](a, b, c, m, n, k, *strides, **consts, num_warps=8, num_stages=3)

        def cublas(c, a=a, b=b):
            torch.mm(a, b, out=c)

        systems = {"triton": triton, "cublas": cublas}
        for s in splits:
            fn = tawac.triton.compile(
                cfg["kernel"], signature=cfg["signature"], constexprs=consts, split_k=s
            )

            def ours(c, fn=fn, a=a, b=b, m=m, n=n, k=k):
                fn[(1,)](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())

            systems[f"split {s}"] = ours
        outs = {}
        for name, f in systems.items():
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            f(c)
            torch.cuda.synchronize()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (shape, name, err)
            outs[name] = c
        names = list(systems)
        samples = {x: [] for x in names}
        for i in round_robin(len(names), args.rounds):
            x = names[i]
            samples[x].append(bench_ms(lambda f=systems[x], c=outs[x]: f(c), 25.0, 100.0)[0])
        ms = {x: statistics.median(v) for x, v in samples.items()}
        print(f"| {shape} | " + " | ".join(f"{ms[x] * 1000:.1f}" for x in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
