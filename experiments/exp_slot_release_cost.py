"""The cost of the fence before each slot release that follows shared loads
(`fence.proxy.async.shared::cta` ahead of `bar.warp.sync`) on the row kernels at their
defaults and on two kernels that read a second matrix from a slot
(`examples/gemm_residual.mlir`'s epilogue, `tests/data/attention_bias.mlir`'s key loop):
the same PTX with and without it (the fence stripped after printing), compiled in one
process, checked against float32 torch, timed round-robin against a copy.

    python3 experiments/exp_slot_release_cost.py [rows] [gemm] [attention]

It ran on an NVIDIA H100 on 2026-12-06 (docs/perf/2026-12-06.md, "The slot release
race"; raw log docs/perf/data/slot-release-fence-cost-h100-2026-12-06.log)."""

import os
import sys
from pathlib import Path

os.environ["TAWAC_CACHE"] = "0"
import torch

import tawac.compiler as tc
import tawac.torch
from tawac.runtime.runner import round_robin_medians

ORIGINAL = tc.print_module
MODE = {"fence": False}
FENCED = "fence.proxy.async.shared::cta;\n\tbar.warp.sync -1;"
ROOT = Path(__file__).resolve().parents[1]
EPS = 1e-5
ROWS = [(4096, 4096), (32768, 4096), (4096, 32768), (16, 131072), (128, 8192)]


def printed(module) -> str:
    text = ORIGINAL(module).replace(FENCED, "bar.warp.sync -1;")
    return text.replace("bar.warp.sync -1;", FENCED) if MODE["fence"] else text


tc.print_module = printed


def rows_case(kernel: str, m: int, n: int):
    """(inputs and outputs, reference of the first output) of a row kernel."""
    x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(torch.bfloat16)
    w = torch.randn(n, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    xf = x.float()
    if kernel == "softmax":
        return (x, y), y, torch.softmax(xf, -1)
    if kernel == "rmsnorm":
        ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
        return (x, w, y, EPS), y, ref
    mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
    ref = torch.nn.functional.layer_norm(xf, (n,), w.float(), b.float(), EPS)
    return (x, w, b, y, mean, rstd, EPS), y, ref


def gemm_case(m: int, n: int, k: int):
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    bt = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.randn(m, n, device="cuda").to(torch.bfloat16)
    d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = 0.5 * (a.float() @ bt.float().T) + 2.0 * c.float()
    return (a, bt, c, d, 0.5, 2.0), d, ref


def attention_case(b: int, h: int, s: int, dim: int):
    q, k, v = (torch.randn(b, h, s, dim, device="cuda").to(torch.bfloat16) for _ in range(3))
    bias = torch.randn(s, s, device="cuda").to(torch.bfloat16)
    o = torch.empty_like(q)
    scale = dim**-0.5
    p = torch.softmax((q.float() @ k.float().transpose(-1, -2) + bias.float()) * scale, -1)
    return (q, k, v, o, bias, scale * 1.4426950408889634), o, p @ v.float()


def timed(label: str, path: Path, params: dict, case) -> None:
    """Both builds of `path` checked (four launches, output poisoned) and timed against
    a copy of the output's bytes."""
    args, out, ref = case
    calls, notes = {}, []
    for fence in (False, True):
        MODE["fence"] = fence
        kern = tawac.torch.kernel(path, params=params)
        bad = 0.0
        for _ in range(4):
            out.fill_(float("nan"))
            kern(*args)
            torch.cuda.synchronize()
            bad = max(bad, float((out.float() - ref).norm() / ref.norm()))
        name = "fence" if fence else "base"
        notes.append(f"{name} rel err {bad:.1e}")
        calls[name] = lambda kern=kern: kern(*args)
    src, dst = torch.empty_like(out), torch.empty_like(out)
    calls["copy"] = lambda: dst.copy_(src)
    med = round_robin_medians(calls, 5)
    print(
        f"{label}: base {med['base'] * 1e3:.1f} us fence {med['fence'] * 1e3:.1f} us "
        f"copy {med['copy'] * 1e3:.1f} us fence/base {med['fence'] / med['base']:.3f}; "
        + "; ".join(notes),
        flush=True,
    )


def main() -> None:
    torch.manual_seed(0)
    which = sys.argv[1:] or ["rows", "gemm", "attention"]
    if "rows" in which:
        for kernel in ("softmax", "rmsnorm", "layernorm"):
            for m, n in ROWS:
                if kernel != "softmax" and n > 32768:
                    continue
                path = ROOT / "examples" / f"{kernel}.mlir"
                timed(f"{kernel} {m}x{n}", path, {"BLOCK_N": 128}, rows_case(kernel, m, n))
    if "gemm" in which:
        for m, n, k in ((8192, 8192, 8192), (4096, 4096, 1024)):
            path = ROOT / "examples" / "gemm_residual.mlir"
            timed(f"gemm_residual {m}x{n}x{k}", path, {}, gemm_case(m, n, k))
    if "attention" in which:
        for s in (2048, 8192):
            path = ROOT / "tests" / "data" / "attention_bias.mlir"
            timed(f"attention_bias 4x16x{s}x128", path, {}, attention_case(4, 16, s, 128))


if __name__ == "__main__":
    main()
