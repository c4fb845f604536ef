"""Triton's compile against tawac's compile of the Triton fused-attention tutorial's
backward (`examples/triton/attention_bwd.py`: `_attn_bwd` with its `_attn_bwd_dkdv` and
`_attn_bwd_dq` loops, fp16, causal as the tutorial's backward is):

- `Triton`: the tutorial kernel launched by Triton with the tutorial's launch (4 warps,
  5 stages, the tutorial's blocks);
- `tawac.triton`: the same Python function through `tawac.triton.compile` (the same
  blocks, `stride_d` specialized to 1 as Triton's launcher does), launched with the same
  arguments and grid.

Both read the same M (base-2 log-sum-exp) and D = rowsum(O dO), computed once in float32
(the tutorial's `_attn_bwd_preprocess` is the same for both and not timed). Same run,
round-robin, medians; each system's dQ, dK, dV are checked against float32 autograd first
(a wrong or failing one is dropped, saying so).

    python3 benchmarks/bench_triton_attention_bwd.py [--dims 64,128]
        [--keys 1024,2048,4096,8192,16384] [--tokens 16384] [--rounds 5]
        [--alt solver --alt heuristic:stages=2 ...] [--no-record]

Shapes: batch = tokens / keys, heads = 2048 / head dim. TFLOP/s count the backward as
2.5 times the causal forward's 2 B H S^2 D FLOPs. `vs Triton` is tawac's speed over
Triton's (> 1 is faster).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import math
import sys
from pathlib import Path

from bench_attention_bwd import _reference, heads_a_chunk
from checks import drop_wrong

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LOG2E = 1.4426950408889634


def _module():
    spec = importlib.util.spec_from_file_location(
        "attention_bwd", ROOT / "examples/triton/attention_bwd.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stats(q, k, v, do, scale):
    """M (the base-2 log-sum-exp of the causal scores) and D = rowsum(O dO), in float32,
    a few heads at a time so the scores of a long sequence fit."""
    import torch

    b, h, s, _ = q.shape
    lse = torch.empty(b, h, s, device=q.device)
    delta = torch.empty(b, h, s, device=q.device)
    later = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    step = heads_a_chunk(h, s)
    with torch.no_grad():
        for i in range(b):
            for j in range(0, h, step):
                part = (i, slice(j, j + step))
                sc = (q[part].float() @ k[part].float().transpose(-1, -2)) * scale
                sc = sc.masked_fill(later, float("-inf"))
                lse[part] = torch.logsumexp(sc, -1) * LOG2E
                o = (torch.softmax(sc, -1) @ v[part].float()).half()
                delta[part] = (o.float() * do[part].float()).sum(-1)
                del sc, o
    return lse, delta


def _row(module, d: int, s: int, tokens: int, rounds: int, alts: list[str]) -> str | None:
    """One row: Triton's and tawac's compile of `_attn_bwd` at head dim d, s keys (and
    tawac's under each configuration of `alts`)."""
    import torch

    import tawac.triton
    from tawac.runtime.runner import round_robin_medians
    from tawac.tools.calibrate import parse_config

    b, h = max(tokens // s, 1), 2048 // d
    g = torch.Generator(device="cuda").manual_seed(s + d)
    q, k, v, do = (
        torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.float16) for _ in "qkvd"
    )
    scale = 1 / math.sqrt(d)
    refs = _reference(q, k, v, do, scale, True)
    lse, delta = _stats(q, k, v, do, scale)
    arg_k = (k.float() * (scale * LOG2E)).half()  # the tutorial's K pre-scale
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    unit = {n: c for n, c in module.TTIR["constexprs"].items() if n != "stride_d"}
    unit["HEAD_DIM"] = d
    grid = (s // unit["BLOCK_N1"], 1, b * h)
    args = (q, arg_k, v, scale, do, dq, dk, dv, lse, delta, *q.stride(), h, s)
    systems = {
        "triton": lambda: module._attn_bwd[grid](*args, **unit, num_warps=4, num_stages=5),
    }
    for name, config in [("tawac", None), *((f"tawac ({a})", a) for a in alts)]:
        planner, fields = parse_config(config) if config else ("auto", {})
        try:
            ours = tawac.triton.compile(
                module._attn_bwd,
                signature=module.TTIR["signature"],
                constexprs=unit,
                schedule=planner,
                **fields,
            )
            ours.specialize(*args)
            systems[name] = lambda ours=ours: ours[grid](*args)
        except Exception as e:  # noqa: BLE001 - a refusal is reported in the table
            print(f"{name} refused d{d} s{s}: {str(e).splitlines()[0]}", flush=True)
    drop_wrong(systems, [dq, dk, dv], list(refs), f"tutorial d{d} s{s}", rtol=3e-2)
    if not systems:
        return None
    med = {n: t * 1e3 for n, t in round_robin_medians(systems, rounds).items()}
    flops = 2.5 * 4 * b * h * s * s * d / 2

    def cell(n: str) -> str:
        return f"{med[n]:.0f}" if n in med else "-"

    tri = med.get("triton")
    best = med.get("tawac", tri)
    ratio = f"{tri / med['tawac']:.2f}x" if tri and "tawac" in med else "-"
    extra = "".join(f" {cell(f'tawac ({a})')} |" for a in alts)
    return (
        f"| {d} | {s} | {b}x{h} | {cell('tawac')} |{extra} {cell('triton')} | "
        f"{flops / (best * 1e-6) / 1e12:.0f} | {ratio} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--keys", default="1024,2048,4096,8192,16384")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--alt", action="append", default=[], help="tawac under another planner "
        "configuration too (solver, heuristic:tma-store=false, ...)"
    )  # fmt: skip
    args = ap.parse_args()
    import torch

    module = _module()
    print(f"# {datetime.date.today()} {torch.cuda.get_device_name()}, fp16, causal")
    print("\nthe Triton tutorial's `_attn_bwd` (us; TFLOP/s of tawac at 2.5x the forward's)\n")
    alts = "".join(f" tawac.triton ({a}) |" for a in args.alt)
    print(f"| d | keys | batch x heads | tawac.triton |{alts} Triton | TFLOP/s | vs Triton |")
    print("|---:|---:|---|---:|" + "---:|" * len(args.alt) + "---:|---:|---:|")
    for d in (int(x) for x in args.dims.split(",")):
        for s in (int(x) for x in args.keys.split(",")):
            row = _row(module, d, s, args.tokens, args.rounds, args.alt)
            if row is not None:
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("triton_attention_bwd", main))
