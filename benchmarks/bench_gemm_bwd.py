"""The GEMMs of a backward pass: for each linear layer of an 8B model (Llama-3 8B's
shapes: hidden 4096, 32 query heads and 8 key/value heads of 128, MLP 14336) at T tokens,
dX = dY W (`tawac.torch`'s `gemm_nn.mlir`: W stored out x in, read N-major) and
dW = dY^T X (`gemm_tn.mlir`: both operands read M/N-major), and the forward Y = X W^T
(`gemm.mlir`) for comparison, against cuBLAS (`torch.mm` of the same views), same run,
round-robin, medians; each result checked against a float32 reference first.

    python3 benchmarks/bench_gemm_bwd.py [--tokens 8192] [--rounds 5] [--no-record]

`vs cuBLAS` is tawac's speed over cuBLAS's (> 1 is faster).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks import drop_wrong  # noqa: E402

#: (layer, in features, out features) of one transformer block
LAYERS = [
    ("qkv", 4096, 4096 + 2 * 1024),
    ("o", 4096, 4096),
    ("gate_up", 4096, 2 * 14336),
    ("down", 14336, 4096),
]


def _rows(tokens: int, rounds: int) -> list[str]:
    import torch

    import tawac.torch as tt
    from tawac.runtime.runner import round_robin_medians

    out = []
    for layer, fin, fout in LAYERS:
        g = torch.Generator(device="cuda").manual_seed(fin + fout)
        x = torch.randn(tokens, fin, device="cuda", generator=g).to(torch.bfloat16)
        w = (torch.randn(fout, fin, device="cuda", generator=g) / fin**0.5).to(torch.bfloat16)
        dy = torch.randn(tokens, fout, device="cuda", generator=g).to(torch.bfloat16)
        cases = {  # layout, operands, M x N x K
            "Y = X W^T": ("nt", (x, w), (tokens, fout, fin)),
            "dX = dY W": ("nn", (dy, w), (tokens, fin, fout)),
            "dW = dY^T X": ("tn", (dy, x), (fout, fin, tokens)),
        }
        for what, (layout, args, (m, n, k)) in cases.items():
            kern = tt._gemm(layout)
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            # the product's operands as views (the storage tawac reads as it is)
            lhs = args[0].T if layout == "tn" else args[0]
            rhs = args[1].T if layout == "nt" else args[1]
            with torch.no_grad():
                ref = lhs.float() @ rhs.float()
            systems = {
                "tawac": lambda kern=kern, args=args, c=c: kern(*args, c),
                "cuBLAS": lambda lhs=lhs, rhs=rhs, c=c: torch.mm(lhs, rhs, out=c),
            }
            drop_wrong(systems, [c], [ref], f"{layer} {what}", rtol=1e-2)
            del ref
            if "tawac" not in systems:
                continue
            med = {s: t * 1e3 for s, t in round_robin_medians(systems, rounds).items()}
            tflops = 2 * m * n * k / (med["tawac"] * 1e-6) / 1e12
            blas = f"{med['cuBLAS']:.0f}" if "cuBLAS" in med else "-"
            ratio = f"{med['cuBLAS'] / med['tawac']:.2f}x" if "cuBLAS" in med else "-"
            out.append(
                f"| {layer} | {what} | {m}x{n}x{k} | {med['tawac']:.0f} | {blas} | "
                f"{tflops:.0f} | {ratio} |"
            )
            print(out[-1], flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch

    print(f"# {datetime.date.today()} {torch.cuda.get_device_name()}, bf16")
    print(f"\nGEMMs of the backward pass, {args.tokens} tokens (us; TFLOP/s of tawac)\n")
    print("| layer | GEMM | M x N x K | tawac | cuBLAS | TFLOP/s | vs cuBLAS |")
    print("|---|---|---|---:|---:|---:|---:|")
    _rows(args.tokens, args.rounds)
    return 0


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("gemm_bwd", main))
