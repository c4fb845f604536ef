"""Tunes the Triton tutorial's fused attention (`examples/triton/attention.py`, fp16, d128,
128x128 blocks) through `TritonFunction.tune` at the benchmark's shapes, causal and not,
and writes `examples/triton/attention._attn_fwd.tune.json` (the table `tawac.triton.compile`
reads beside the source by default). On the GPU machine:

    python3 scripts/tune_triton_attention.py [--shapes 4x32x1024,...] [--space persistent=false]
        [--rounds 5] [--rep-ms 100] [--table FILE] [--kinds causal,plain]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = "4x32x1024,4x32x2048,4x32x4096,2x32x8192,1x32x16384"


def main() -> int:
    import torch

    import tawac.triton
    from tawac.support.options import knob

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--space", action="append", default=[], help="NAME=V1,V2 (knob values)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--table", type=Path, default=None)
    ap.add_argument("--kinds", default="causal,plain", help="causal, plain (not causal) or both")
    args = ap.parse_args()
    space = {}
    for item in args.space or ["persistent=false"]:
        name, _, values = item.partition("=")
        k = knob(name.replace("-", "_"))
        assert k is not None, name
        space[k.name] = [k.parse(v) for v in values.split(",")]
    path = ROOT / "examples/triton/attention.py"
    spec = importlib.util.spec_from_file_location("attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = module.TTIR
    table = args.table or tawac.triton.table_path(cfg["kernel"])
    print(f"# {torch.cuda.get_device_name()}; table {table}; space {space}")
    kinds = args.kinds.split(",")
    for causal in [c for c in (False, True) if ("causal" if c else "plain") in kinds]:
        for shape in args.shapes.split(","):
            z, h, n = (int(x) for x in shape.split("x"))
            consts = {"N_CTX": n, "BLOCK_M": 128, "BLOCK_N": 128, "HEAD_DIM": 128,
                      "STAGE": 3 if causal else 1}  # fmt: skip
            fn = tawac.triton.compile(
                cfg["kernel"], signature=cfg["signature"], constexprs=consts, tuning=None
            )
            q, k, v = (torch.randn(z, h, n, 128, device="cuda", dtype=torch.float16)
                       for _ in range(3))  # fmt: skip
            o = torch.empty_like(q)
            m = torch.empty(z, h, n, device="cuda")
            call = (q, k, v, 128**-0.5, m, o, *q.stride(), *k.stride(), *v.stride(),
                    *o.stride(), z, h)  # fmt: skip
            res = fn.tune(*call, space=space, sizes=["Z", "H", "N_CTX"], rounds=args.rounds,
                          rep_ms=args.rep_ms, table=table)  # fmt: skip
            won = res.entry["options"]
            print(f"{'causal' if causal else 'plain '} {shape}: " + "; ".join(res.lines())
                  + f" -> {won}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
