"""Grouped GEMM for a mixture-of-experts layer: `examples/gemm_grouped.mlir`
against `torch._grouped_mm` (one launch over every expert, from the offsets) and a loop
of `torch.mm` over the experts (cuBLAS per expert), same run, round-robin, medians.

Tokens are routed unevenly (a skewed draw; every 7th expert gets none). tawac's kernel
reads the routing step's block-aligned layout (each expert's rows padded to a multiple of
BLOCK_M, an expert id per row block: what vLLM's moe_align_block_size produces), built
once here and not timed; the two torch paths read the unpadded tokens and the offsets.
Every result is checked against the loop of float32 products first.

    python3 benchmarks/bench_gemm_grouped.py [--experts 8,64] [--tokens 4096,32768]
        [--nk 4096x4096,14336x4096] [--rounds 5] [--fp8]

With `--fp8`: `examples/gemm_grouped_fp8.mlir` (f8E4M3FN operands, per-tensor scales,
bf16 out) against a loop of `torch._scaled_mm` over the experts (cuBLAS fp8).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def route(tokens: int, experts: int, seed: int):
    """Tokens per expert: a skewed multinomial draw, every 7th expert empty."""
    import torch

    g = torch.Generator().manual_seed(seed)
    weights = (torch.rand(experts, generator=g) + 0.2) ** 3
    weights[::7] = 0
    return torch.multinomial(weights, tokens, replacement=True, generator=g).bincount(
        minlength=experts
    )


def aligned(a, counts, block: int):
    """The block-aligned layout: each expert's rows padded with zeros to a multiple of
    `block`, and the expert id of each row block."""
    import torch

    padded = (counts + block - 1) // block * block
    rows = int(padded.sum())
    a_pad = torch.zeros(rows, a.shape[1], device=a.device, dtype=a.dtype)
    starts = torch.cumsum(counts, 0) - counts
    pstarts = torch.cumsum(padded, 0) - padded
    for e in range(len(counts)):
        n = int(counts[e])
        if n:
            a_pad[int(pstarts[e]) : int(pstarts[e]) + n] = a[int(starts[e]) : int(starts[e]) + n]
    ids = torch.repeat_interleave(torch.arange(len(counts)), padded // block)
    return a_pad, ids.to(torch.int32).to(a.device), starts, pstarts


def blocks_of(counts, block: int, device):
    """The row blocks of the unpadded layout (`examples/gemm_grouped_offsets.mlir`): per
    block its expert, first row and the end of its expert's rows."""
    import torch

    experts, starts, ends = [], [], []
    row = 0
    for e, m in enumerate(int(x) for x in counts):
        for first in range(row, row + m, block):
            experts.append(e)
            starts.append(first)
            ends.append(row + m)
        row += m
    as_t = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    return as_t(experts), as_t(starts), as_t(ends)


def cases(args):
    """(experts, tokens, n, k, params) of the command line's product. The routing
    step's block is 128 rows; where the groups average under 256 tokens the kernel
    streams the experts' weights, and 128-column tiles read them fastest (more tiles of
    W in flight per SM: 2.9-3.1 TB/s of W against 2.4-2.7 with 256 columns or 64-row
    blocks, `experiments/exp_grouped_configs.py`, docs/perf.md)."""
    for experts in (int(x) for x in args.experts.split(",")):
        for tokens in (int(x) for x in args.tokens.split(",")):
            for nk in args.nk.split(","):
                n, k = (int(x) for x in nk.split("x"))
                few = tokens // experts < 256
                params = {"BLOCK_M": 128, "BLOCK_N": 128 if few else 256}
                yield experts, tokens, n, k, params


def kernel_for(kernels: dict, source: str, params: dict):
    """`examples/<source>` with these kernel parameters, compiled (through the cache)
    once."""
    import json

    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    key = (source, *sorted(params.items()))
    if key not in kernels:
        built = compile_cached(ROOT / "examples" / source, params=params)
        kernels[key] = load_kernel(built.cubin, json.loads(built.sidecar_text))
    return kernels[key]


def padded_error(c_pad, pstarts, bounds, reference) -> float:
    """The worst relative error of each expert's rows of the padded output against
    `reference(e, first, rows)`; NaN where the output kept a poisoned element."""
    if c_pad.isnan().any():
        return float("nan")
    worst = 0.0
    for e, (s, m) in enumerate(bounds):
        if not m:
            continue
        ref = reference(e, s, m)
        got = c_pad[int(pstarts[e]) : int(pstarts[e]) + m].float()
        worst = max(worst, ((got - ref).norm() / ref.norm()).item())
    return worst


def medians(calls: dict, names: list[str], rounds: int) -> dict[str, float]:
    """Milliseconds per call of each of `names`, timed round-robin, medians."""
    from tawac.runtime.runner import round_robin_medians

    return round_robin_medians({n: calls[n] for n in names}, rounds, 10.0, 50.0)


def rate(ms: float, flops: float) -> str:
    return f"{ms:.3f} ({flops / (ms * 1e-3) / 1e12:.0f})"


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experts", default="8,64")
    ap.add_argument("--tokens", default="4096,32768")
    ap.add_argument("--nk", default="4096x4096,14336x4096")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fp8", action="store_true")
    args = ap.parse_args()
    if args.fp8:
        return fp8(args)
    grouped_mm = getattr(torch, "_grouped_mm", None)
    names = ["tawac", "tawac (offsets)", "torch._grouped_mm", "loop of torch.mm"]
    print(f"# grouped GEMM, bf16, {datetime.date.today()}, {torch.cuda.get_device_name(0)}; "
          "ms (TFLOP/s of the routed tokens' products)")  # fmt: skip
    print("| E | T | N x K | tokens per expert (min-max) | " + " | ".join(names)
          + " | tawac / grouped_mm | tawac / loop | offsets / grouped_mm |")  # fmt: skip
    print("|---|---|---|---|" + "---:|" * (len(names) + 3))
    kernels: dict = {}
    for experts, tokens, n, k, params in cases(args):
        block = params["BLOCK_M"]
        kern = kernel_for(kernels, "gemm_grouped.mlir", params)
        unpadded = kernel_for(kernels, "gemm_grouped_offsets.mlir", params)
        counts = route(tokens, experts, experts * tokens + n)
        torch.manual_seed(0)
        a = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.1
        a_pad, ids, starts, pstarts = aligned(a, counts, block)
        c_pad = torch.full((a_pad.shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16)
        c_off = torch.full((tokens, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        blk = blocks_of(counts, block, a.device)
        offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
        out = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
        bounds = [(int(starts[e]), int(counts[e])) for e in range(experts)]

        def loop(a=a, w=w, out=out, bounds=bounds):
            for e, (s, m) in enumerate(bounds):
                if m:
                    torch.mm(a[s : s + m], w[e].T, out=out[s : s + m])

        calls = {
            "tawac": lambda kern=kern, a_pad=a_pad, w=w, ids=ids, c=c_pad: kern(a_pad, w, ids, c),
            "tawac (offsets)": lambda k=unpadded, a=a, w=w, blk=blk, c=c_off: k(a, w, *blk, c),
            "loop of torch.mm": loop,
        }
        if grouped_mm is not None:
            calls["torch._grouped_mm"] = lambda a=a, w=w, offs=offs: grouped_mm(
                a, w.transpose(-2, -1), offs=offs
            )
        # correctness first: tawac's rows against the float32 products, the offsets
        # kernel and grouped_mm against the loop
        for name in ("loop of torch.mm", "tawac", "tawac (offsets)"):
            calls[name]()
        torch.cuda.synchronize()
        worst = padded_error(
            c_pad, pstarts, bounds, lambda e, s, m, a=a, w=w: a[s : s + m].float() @ w[e].float().T
        )
        err = ((c_off.float() - out.float()).norm() / out.float().norm()).item()
        if not (worst < 1e-2 and err < 1e-2) or c_off.isnan().any():
            print(f"tawac wrong at E={experts} T={tokens} {n}x{k}: padded {worst}, offsets {err}")
            return 1
        if grouped_mm is not None:
            g = calls["torch._grouped_mm"]()
            err = ((g.float() - out.float()).norm() / out.float().norm()).item()
            assert err < 1e-2, err
        ms = medians(calls, [s for s in names if s in calls], args.rounds)
        flops = 2 * tokens * n * k
        cells = [rate(ms[s], flops) if s in ms else "-" for s in names]
        vs_g = f"{ms['torch._grouped_mm'] / ms['tawac']:.2f}x" if grouped_mm else "-"
        off_g = f"{ms['torch._grouped_mm'] / ms['tawac (offsets)']:.2f}x" if grouped_mm else "-"
        nz = counts[counts > 0]
        print(f"| {experts} | {tokens} | {n}x{k} | {int(nz.min())}-{int(nz.max())} "
              f"({block}x{params['BLOCK_N']} tiles) | " + " | ".join(cells)
              + f" | {vs_g} | {ms['loop of torch.mm'] / ms['tawac']:.2f}x"
              + f" | {off_g} |")  # fmt: skip
    return 0


def fp8(args) -> int:
    """The fp8 grouped GEMM against the loop of `torch._scaled_mm` (per-tensor scales)."""
    import torch

    f8 = torch.float8_e4m3fn
    names = ["tawac fp8", "loop of torch._scaled_mm"]
    print(f"# fp8 grouped GEMM, {datetime.date.today()}, {torch.cuda.get_device_name(0)}; "
          "ms (TFLOP/s of the routed tokens' products)")  # fmt: skip
    print("| E | T | N x K | " + " | ".join(names) + " | tawac / loop |")
    print("|---|---|---|" + "---:|" * (len(names) + 1))
    kernels: dict = {}
    one = torch.tensor(1.0, device="cuda")
    scale_a, scale_w = one * 0.5, one * 0.25  # the kernel's 0.5 and 0.25 below
    for experts, tokens, n, k, _ in cases(args):
        # the fp8 kernel's own measured rule: 64-row blocks for groups under 256 tokens
        block = 64 if tokens // experts < 256 else 128
        kern = kernel_for(kernels, "gemm_grouped_fp8.mlir", {"BLOCK_M": block})
        counts = route(tokens, experts, experts * tokens + n)
        torch.manual_seed(0)
        a = (torch.randn(tokens, k, device="cuda") * 0.5).to(f8)
        w = (torch.randn(experts, n, k, device="cuda") * 0.5).to(f8)
        a_pad, ids, starts, pstarts = aligned(a.view(torch.uint8), counts, block)
        a_pad = a_pad.view(f8)
        c_pad = torch.full((a_pad.shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16)
        out = torch.empty(tokens, n, device="cuda", dtype=torch.bfloat16)
        bounds = [(int(starts[e]), int(counts[e])) for e in range(experts)]

        def loop(a=a, w=w, out=out, bounds=bounds):
            for e, (s, m) in enumerate(bounds):
                if m:
                    out[s : s + m] = torch._scaled_mm(
                        a[s : s + m], w[e].T, scale_a=scale_a, scale_b=scale_w,
                        out_dtype=torch.bfloat16,
                    )  # fmt: skip

        calls = {
            "tawac fp8": lambda kern=kern, a_pad=a_pad, w=w, ids=ids, c=c_pad: kern(
                a_pad, w, ids, c, 0.5, 0.25
            ),
            "loop of torch._scaled_mm": loop,
        }
        loop()
        calls["tawac fp8"]()
        torch.cuda.synchronize()
        worst = padded_error(
            c_pad, pstarts, bounds, lambda e, s, m, out=out: out[s : s + m].float()
        )
        if not worst < 1e-2:
            print(f"tawac fp8 wrong at E={experts} T={tokens} {n}x{k}: error {worst}")
            return 1
        ms = medians(calls, names, args.rounds)
        flops = 2 * tokens * n * k
        speedup = ms["loop of torch._scaled_mm"] / ms["tawac fp8"]
        print(f"| {experts} | {tokens} | {n}x{k} | "
              + " | ".join(rate(ms[s], flops) for s in names) + f" | {speedup:.2f}x |")  # fmt: skip
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("gemm_grouped", main))
