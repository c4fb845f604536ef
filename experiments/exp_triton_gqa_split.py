"""Experiment: the user-style grouped-query attention (`tests/data/triton/unseen_attention.py`,
`gqa_fwd`) compiled by `tawac.triton` with its key loop split (`split_k`, the split-keys
decomposition of `examples/attention_decode.mlir`) at decode sizes, against SDPA. Checks
each result against a float32 reference, then times round-robin medians.

    python3 experiments/exp_triton_gqa_split.py [--splits 1,4,8,16] [--shapes 1x32x4x1x32768,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    import torch
    import torch.nn.functional as F

    import tawac.triton
    from tawac.runtime.runner import bench_ms, round_robin

    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", default="1,4,8,16")
    ap.add_argument(
        "--shapes", default="1x32x4x1x32768,1x32x4x1x131072,8x32x4x1x8192,1x32x8x16x32768"
    )
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    path = ROOT / "tests/data/triton/unseen_attention.py"
    spec = importlib.util.spec_from_file_location("ua", path)
    assert spec is not None and spec.loader is not None
    src = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(src)
    cfg = src.TTIR_VARIANTS["unseen_gqa"]
    print(f"# gqa_fwd through tawac.triton with split keys, {torch.cuda.get_device_name(0)}")
    splits = [int(s) for s in args.splits.split(",")]
    print("| B x H x HK x rows x keys | sdpa | " + " | ".join(f"split {s}" for s in splits) + " |")
    print("|---|" + "---:|" * (len(splits) + 1))
    for shape in args.shapes.split(","):
        b, h, hk, rows, keys = (int(x) for x in shape.split("x"))
        consts = {**cfg["constexprs"], "G": h // hk}
        q = torch.randn(b, h, rows, 128, device="cuda", dtype=torch.bfloat16)
        k, v = (
            torch.randn(b, hk, keys, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2)
        )
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)

        def sdpa(o, q=q, k=k, v=v):
            o.copy_(F.scaled_dot_product_attention(q, k, v, enable_gqa=True))

        systems = {"sdpa": sdpa}
        for s in splits:
            fn = tawac.triton.compile(
                cfg["kernel"], signature=cfg["signature"], constexprs=consts, split_k=s
            )
            strides = [*q.stride()[:3], *k.stride()[:3], *v.stride()[:3]]

            def call(o, fn=fn, strides=strides, q=q, k=k, v=v, rows=rows, keys=keys):
                fn[(1,)](q, k, v, o, 1 / math.sqrt(128), rows, keys, *strides, *o.stride()[:3])

            systems[f"split {s}"] = call
        outs = {}
        for name, f in systems.items():
            o = torch.full_like(q, float("nan"))
            try:
                f(o)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 (an experiment: report and go on)
                print(f"{shape} {name}: {type(e).__name__}: {e}")
                return 1
            err = (o.float() - ref).abs().max().item()
            assert err < 2e-2, (shape, name, err)
            outs[name] = o
        names = list(systems)
        samples = {n: [] for n in names}
        for i in round_robin(len(names), args.rounds):
            n = names[i]
            samples[n].append(bench_ms(lambda f=systems[n], o=outs[n]: f(o), 25.0, 100.0)[0])
        ms = {n: statistics.median(x) for n, x in samples.items()}
        print(f"| {shape} | " + " | ".join(f"{ms[n] * 1000:.1f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
