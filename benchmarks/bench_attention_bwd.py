"""Attention backward: tawac's three kernels (`examples/attention_bwd_pre.mlir`,
`attention_bwd_dkdv[_causal].mlir`, `attention_bwd_dq[_causal].mlir`, from the
log-sum-exp that `examples/attention_lse.mlir` or `attention_causal_lse.mlir` saves)
against the backward of PyTorch's SDPA with the cuDNN backend and with the flash backend
(FlashAttention-2), same run, round-robin, medians; each system's dQ, dK, dV are checked
against float32 autograd first (a wrong or failing one is dropped, saying so).

    python3 benchmarks/bench_attention_bwd.py [--dims 64,128] [--keys 1024,2048,...]
        [--causal 0,1] [--tokens 16384] [--rounds 5] [--no-record]

Shapes: batch = tokens / keys, heads = 2048 / head dim, bf16, causal and not. TFLOP/s
count the backward as 2.5 times the forward's 4 B H S^2 D FLOPs (half of them causal),
as flash-attention's benchmark does. `vs cuDNN` and `vs FA2` are tawac's speed over
theirs (> 1 is faster).

The Triton tutorial's backward is timed by `bench_triton_attention_bwd.py`.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

from checks import drop_wrong

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples"
LOG2E = 1.4426950408889634


def _run(d: int, s: int, causal: bool, tokens: int, rounds: int) -> str | None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import tawac.torch
    from tawac.runtime.runner import round_robin_medians
    from tawac.torch import attention_params

    b, h = max(tokens // s, 1), 2048 // d
    g = torch.Generator(device="cuda").manual_seed(s + d)
    q, k, v, do = (
        torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16) for _ in "qkvd"
    )
    scale = 1 / math.sqrt(d)
    tail = "_causal" if causal else ""
    names = {
        "fwd": "attention_causal_lse" if causal else "attention_lse",
        "pre": "attention_bwd_pre",
        "dkdv": f"attention_bwd_dkdv{tail}",
        "dq": f"attention_bwd_dq{tail}",
    }
    kernels = {
        role: tawac.torch.kernel(EXAMPLES / f"{n}.mlir", params=attention_params(n, d))
        for role, n in names.items()
    }
    o = torch.empty_like(q)
    lse = torch.empty(b, h, s, device="cuda")
    kernels["fwd"](q, k, v, o, lse, scale * LOG2E)
    delta = torch.empty(b, h, s, device="cuda")
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))

    def ours():
        kernels["pre"](o, do, delta)
        kernels["dkdv"](q, k, v, do, lse, delta, dk, dv, scale * LOG2E)
        kernels["dq"](q, k, v, do, lse, delta, dq, scale * LOG2E)

    def sdpa(backend):
        qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(qs, ks, vs, scale=scale, is_causal=causal)

        def step():
            got = torch.autograd.grad(out, (qs, ks, vs), do, retain_graph=True)
            dq.copy_(got[0]), dk.copy_(got[1]), dv.copy_(got[2])

        return step

    systems = {"tawac": ours}
    for name, backend in (
        ("cudnn", SDPBackend.CUDNN_ATTENTION),
        ("fa2", SDPBackend.FLASH_ATTENTION),
    ):
        try:
            systems[name] = sdpa(backend)
        except RuntimeError as e:
            print(f"# {name} unavailable at d{d} s{s}: {e}", file=sys.stderr)
    refs = _reference(q, k, v, do, scale, causal)
    shape = f"d{d} s{s}{' causal' if causal else ''}"
    drop_wrong(systems, [dq, dk, dv], refs, shape, rtol=3e-2)
    if "tawac" not in systems:
        return None
    med = {n: t * 1e3 for n, t in round_robin_medians(systems, rounds).items()}
    flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    tflops = flops / (med["tawac"] * 1e-6) / 1e12

    def cell(n):
        return f"{med[n]:.0f}" if n in med else "-"

    def speed(n):
        return f"{med[n] / med['tawac']:.2f}x" if n in med else "-"

    return (
        f"| {d} | {'yes' if causal else 'no'} | {s} | {b}x{h} | {med['tawac']:.0f} | "
        f"{cell('cudnn')} | {cell('fa2')} | {tflops:.0f} | {speed('cudnn')} | {speed('fa2')} |"
    )


def heads_a_chunk(h: int, s: int) -> int:
    """Heads of `s` x `s` float32 scores computed at once by a reference: at most 1 GiB."""
    return max(1, min(h, (1 << 28) // (s * s)))


def _reference(q, k, v, do, scale, causal):
    """dQ, dK, dV in float32 (autograd through softmax(Q K^T scale) V), computed a few
    heads at a time so the scores of a long sequence fit."""
    import torch

    grads = [torch.empty(q.shape, device=q.device) for _ in range(3)]
    b, h, s, _ = q.shape
    step = heads_a_chunk(h, s)
    for i in range(b):
        for j in range(0, h, step):
            part = (slice(i, i + 1), slice(j, j + step))
            qf, kf, vf = (t[part].float().requires_grad_() for t in (q, k, v))
            scores = qf @ kf.transpose(-1, -2) * scale
            if causal:
                later = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
                scores = scores.masked_fill(later, float("-inf"))
            p = torch.softmax(scores, dim=-1)
            (p @ vf).backward(do[part].float())
            for g, t in zip(grads, (qf, kf, vf), strict=True):
                g[part] = t.grad
    return grads


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--keys", default="1024,2048,4096,8192,16384")
    ap.add_argument("--causal", default="0,1", help="0: full, 1: causal, comma-separated")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch

    print(f"# {datetime.date.today()} {torch.cuda.get_device_name()}, bf16")
    print("\nattention backward (us; TFLOP/s at 2.5x the forward's FLOPs)\n")
    print(
        "| d | causal | keys | batch x heads | tawac | cuDNN | FA2 | TFLOP/s | vs cuDNN | vs FA2 |"
    )
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for d in (int(x) for x in args.dims.split(",")):
        for causal in (x == "1" for x in args.causal.split(",")):
            for s in (int(x) for x in args.keys.split(",")):
                row = _run(d, s, causal, args.tokens, args.rounds)
                if row is not None:
                    print(row, flush=True)
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("attention_bwd", main))
