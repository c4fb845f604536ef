"""Triton's compile against tawac's compile of the Triton tutorial's fused attention
forward (`examples/triton/attention.py`, block pointers, fp16, head dim 128, 128x128
blocks), not causal and causal:

- `triton`: the tutorial kernel launched by Triton (its H100 configuration for these
  blocks: 8 warps, 3 stages);
- `tawac (ttir)`: the shipped `.ttir` (N_CTX = 4096 compiled in) compiled by tawac, at
  that length only;
- `tawac.triton`: the same Python source through `tawac.triton.compile`, launched with
  Triton's own arguments and grid, with the tuning table beside the source
  (`examples/triton/attention._attn_fwd.tune.json`, `scripts/tune_triton_attention.py`)
  where there is one; then also `tawac.triton (no table)`, without it;
- `tawac (tile)`: tawac's own tile-dialect kernel of the same blocks
  (`examples/attention.mlir` / `attention_causal.mlir`, bf16: the same tensor-core rate;
  it writes no log-sum-exp);
- `tawac (tile, fp16)`: the same tile program with its element type fp16, so on the
  same inputs as the Triton-source kernels (the data's type changes the power the
  tensor cores draw, hence the clock: the like-for-like figure for "within 5% of the
  tile example");
- `sdpa`: `torch.nn.functional.scaled_dot_product_attention` (its flash backend).

Same run, round-robin, medians; every kernel's O checked against a float32 torch
reference first (and M, the base-2 log-sum-exp, for the Triton-source kernels).

    python3 benchmarks/bench_triton_attention.py [--causal] [--rounds 5]
        [--shapes 4x32x4096,...]   # Z x H x N_CTX
        [--alt solver --alt heuristic:persistent=false ...]
        [--triton-alt chain-loops=false ...]   # tawac.triton with other knobs
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = ["4x32x1024", "4x32x2048", "4x32x4096", "2x32x8192"]
D = 128
BLOCK = 128
UNIT = ("stride_qk", "stride_kk", "stride_vn", "stride_on")


def _module():
    path = ROOT / "examples/triton/attention.py"
    spec = importlib.util.spec_from_file_location("attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(q, k, v, scale, m, o):
    z, h = q.shape[:2]
    return (q, k, v, scale, m, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), z, h)


def _triton(causal: bool):
    kernel = _module()._attn_fwd

    def run(q, k, v, scale, m, o):
        z, h, n = q.shape[:3]
        grid = (n // BLOCK, z * h, 1)
        kernel[grid](*_args(q, k, v, scale, m, o), N_CTX=n, BLOCK_M=BLOCK, BLOCK_N=BLOCK,
                     HEAD_DIM=D, STAGE=3 if causal else 1, num_warps=8, num_stages=3)  # fmt: skip

    return run


def _tawac_triton(causal: bool, options: dict | None = None, tuning="auto"):
    import tawac.triton

    cfg = _module().TTIR
    kernels = {}
    options = options or {}

    def run(q, k, v, scale, m, o):
        z, h, n = q.shape[:3]
        if n not in kernels:
            consts = {"N_CTX": n, "BLOCK_M": BLOCK, "BLOCK_N": BLOCK, "HEAD_DIM": D,
                      "STAGE": 3 if causal else 1}  # fmt: skip
            kernels[n] = tawac.triton.compile(
                cfg["kernel"], signature=cfg["signature"], constexprs=consts, tuning=tuning,
                **options,
            )  # fmt: skip
        kernels[n][(n // BLOCK, z * h)](*_args(q, k, v, scale, m, o))

    return run


def _tuned() -> bool:
    """Whether `tawac.triton.compile` finds a tuning table beside the tutorial's source
    (then the benchmark also times the function without it)."""
    import tawac.triton

    path = tawac.triton.table_path(_module()._attn_fwd)
    return path is not None and path.exists()


def _tawac_ttir(causal: bool):
    from tawac.triton import from_ttir

    path = ROOT / f"examples/triton/attention{'_causal' if causal else ''}.ttir"
    params = [n for n in _module().TTIR["signature"]]
    k = from_ttir(path.read_text(), str(path), dict.fromkeys(UNIT, 1), params)

    def run(q, kk, v, scale, m, o):
        if q.shape[2] != 4096:
            return None  # N_CTX is compiled in
        z, h = q.shape[:2]
        return k[(4096 // BLOCK, z * h)](*_args(q, kk, v, scale, m, o))

    return run


def _tawac_alt(causal: bool, config: str):
    """The shipped `.ttir` compiled by tawac under a planner configuration
    ("solver", "heuristic:persistent=false", ...), at N_CTX = 4096 only."""
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel
    from tawac.tools.calibrate import parse_config
    from tawac.triton import TritonKernel, kernel_abi

    path = ROOT / f"examples/triton/attention{'_causal' if causal else ''}.ttir"
    planner, fields = parse_config(config)
    built = compile_cached(path, cubin=True, schedule=planner, **fields)
    launch = load_kernel(built.cubin, json.loads(built.sidecar_text))
    params = list(_module().TTIR["signature"])
    abi = kernel_abi(path.read_text(), str(path))
    k = TritonKernel.from_abi(abi, launch, dict.fromkeys(UNIT, 1), "_attn_fwd", params)

    def run(q, kk, v, scale, m, o):
        if q.shape[2] != 4096:
            return None
        return k(*_args(q, kk, v, scale, m, o))

    return run


def _tawac_tile(causal: bool, fp16: bool = False):
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    path = ROOT / f"examples/attention{'_causal' if causal else ''}.mlir"
    params = None if causal else {"BLOCK_M": BLOCK, "BLOCK_N": BLOCK}
    text = path.read_text()
    if fp16:  # the example with every bf16 tile and tensor as f16
        text = text.replace("bf16", "f16")
    built = compile_cached(path, params=params, text=text, cubin=True)
    kernel = load_kernel(built.cubin, json.loads(built.sidecar_text))

    def run(q, k, v, scale, m, o):
        kernel(q, k, v, o, scale * 1.44269504)

    return run


def _sdpa(causal: bool):
    import torch.nn.functional as F

    def run(q, k, v, scale, m, o):
        o.copy_(F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale))

    return run


def _reference(q, k, v, scale, causal):
    import torch

    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), -math.inf)
    return torch.softmax(s, -1) @ v.float(), torch.logsumexp(s, -1) / math.log(2)


def main(argv: list[str] | None = None) -> int:
    import torch

    from tawac.runtime.runner import bench_ms, round_robin

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument(
        "--alt", action="append", default=[], help="the .ttir under another planner "
        "configuration too, at N_CTX 4096 (solver, heuristic:persistent=false, ...)"
    )  # fmt: skip
    ap.add_argument(
        "--triton-alt", action="append", default=[], help="tawac.triton with these "
        "pipeline knobs too, at every length (chain-loops=false, ...)"
    )  # fmt: skip
    args = ap.parse_args(argv)
    c = args.causal
    from tawac.tools.calibrate import parse_config

    systems = {
        "triton": _triton(c),
        "tawac (ttir)": _tawac_ttir(c),
        "tawac.triton": _tawac_triton(c),
        **({"tawac.triton (no table)": _tawac_triton(c, tuning=None)} if _tuned() else {}),
        "tawac (tile)": _tawac_tile(c),
        "tawac (tile, fp16)": _tawac_tile(c, fp16=True),
        "sdpa": _sdpa(c),
        **{f"tawac ({a})": _tawac_alt(c, a) for a in args.alt},
        **{
            f"tawac.triton ({a})": _tawac_triton(c, parse_config(f"auto:{a}")[1])
            for a in args.triton_alt
        },
    }
    only_4096 = {"tawac (ttir)", *(f"tawac ({a})" for a in args.alt)}  # N_CTX compiled in
    dev = torch.cuda.get_device_name(0)
    kind = "fused attention forward" + (" (causal)" if c else "")
    print(f"# {kind}, fp16, d={D}, {BLOCK}x{BLOCK} blocks: Triton vs tawac on the same "
          f"Triton source, {datetime.date.today()}, {dev}")  # fmt: skip
    print(f"# {args.rounds} round-robin rounds, medians (ms); TFLOP/s in brackets")
    names = list(systems)
    print("| Z x H x N | " + " | ".join(names) + " | tawac.triton / triton | "
          "tawac.triton / tawac (tile) | tawac.triton / tawac (tile, fp16) |")  # fmt: skip
    print("|---|" + "---:|" * (len(names) + 3))
    for shape in args.shapes.split(","):
        z, h, n = (int(x) for x in shape.split("x"))
        torch.manual_seed(0)
        q, k, v = (torch.randn(z, h, n, D, device="cuda", dtype=torch.float16) for _ in range(3))
        scale = 1 / math.sqrt(D)
        ref, lse = _reference(q, k, v, scale, c)
        outs, live = {}, []
        for s, fn in systems.items():
            dt = torch.bfloat16 if s == "tawac (tile)" else torch.float16
            ins = (q, k, v) if dt == torch.float16 else tuple(x.to(dt) for x in (q, k, v))
            o = torch.full((z, h, n, D), float("nan"), device="cuda", dtype=dt)
            m = torch.full((z, h, n), float("nan"), device="cuda")
            fn(*ins, scale, m, o)
            if s in only_4096 and n != 4096:
                continue
            torch.cuda.synchronize()
            err = (o.float() - ref).abs().max().item()
            bad = not err < 2e-2
            if s in ("triton", "tawac (ttir)") or s.startswith("tawac.triton"):
                bad = bad or not (m - lse).abs().max().item() < 1e-2
            if bad:
                print(f"{s} at {shape}: wrong result (max error {err})")
                return 1
            outs[s] = (fn, (*ins, scale, m, o))
            live.append(s)
        samples: dict[str, list[float]] = {s: [] for s in live}
        for i in round_robin(len(live), args.rounds):
            fn, call = outs[live[i]]
            samples[live[i]].append(bench_ms(lambda f=fn, a=call: f(*a), 25.0, 100.0)[0])
        ms = {s: statistics.median(v) for s, v in samples.items()}
        flops = 4.0 * z * h * n * n * D * (0.5 if c else 1.0)
        cells = [f"{ms[s]:.4f} ({flops / ms[s] / 1e9:.0f})" if s in ms else "-" for s in names]
        r1 = ms["triton"] / ms["tawac.triton"]
        r2 = ms["tawac (tile)"] / ms["tawac.triton"]
        r3 = ms["tawac (tile, fp16)"] / ms["tawac.triton"]
        print(f"| {shape} | " + " | ".join(cells) + f" | {r1:.2f}x | {r2:.2f}x | {r3:.2f}x |")
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("triton_attention", main))
