"""Triton's compile against tawac's compile of the same Triton source (issue 21): the
tutorial matmul of `examples/triton/matmul.py` launched by Triton (its tutorial's
configuration for 128x256x64 tiles: 8 warps, 3 stages) and its TTIR
(`examples/triton/matmul.ttir`) compiled by tawac, next to cuBLAS (`torch.mm`) and
tawac's own tile-dialect kernel of the same shape (`corpus/gemm_nn_fp16.mlir`, B stored
K x N, 128x256 tiles), and the same source through `tawac.triton.compile` launched with
Triton's own arguments. Same run, round-robin, medians; every kernel checked against a
float32 torch reference first.

    python3 benchmarks/bench_triton.py [--rounds 5] [--sizes 4096x4096x4096,...]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = ["4096x4096x4096", "8192x8192x8192", "3000x5000x2000", "2304x4608x3072", "1000x1000x1000"]


def _triton_matmul():
    spec = importlib.util.spec_from_file_location("tutorial", ROOT / "examples/triton/matmul.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel, consts = module.matmul_kernel, module.TTIR["constexprs"]

    def run(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        grid = (-(-m // consts["BLOCK_SIZE_M"]) * -(-n // consts["BLOCK_SIZE_N"]),)
        kernel[grid](
            a, b, c, m, n, k,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            **consts, num_warps=8, num_stages=3,
        )  # fmt: skip

    return run


def _tawac_triton():
    """The tutorial kernel through `tawac.triton.compile`, launched with Triton's
    arguments (the adapter builds the tensors from pointers, sizes and strides)."""
    import tawac.triton

    spec = importlib.util.spec_from_file_location("tutorial", ROOT / "examples/triton/matmul.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cfg = module.TTIR
    k = tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )

    def run(a, b, c):
        m, kk = a.shape
        n = b.shape[1]
        k[(1,)](a, b, c, m, n, kk, *a.stride(), *b.stride(), *c.stride())

    return run


def _tawac(source: Path, params=None):
    from tawac.driver import compile_cached
    from tawac.runtime import load_kernel

    built = compile_cached(source, params=params, cubin=True)
    import json

    kernel = load_kernel(built.cubin, json.loads(built.sidecar_text))
    return lambda a, b, c: kernel(a, b, c)


def _bound(fn, a, b, c):
    return lambda: fn(a, b, c)


def main(argv: list[str] | None = None) -> int:
    import torch

    from tawac.runtime.runner import bench_ms, round_robin

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default=",".join(SIZES))
    args = ap.parse_args(argv)
    systems = {
        "triton": _triton_matmul(),
        "tawac (ttir)": _tawac(ROOT / "examples/triton/matmul.ttir"),
        "tawac.triton": _tawac_triton(),
        "tawac (tile)": _tawac(ROOT / "corpus/gemm_nn_fp16.mlir", {"BLOCK_N": 256}),
        "cublas": lambda a, b, c: torch.mm(a, b, out=c),
    }
    dev = torch.cuda.get_device_name(0)
    print(f"# Triton vs tawac on the same Triton source, {datetime.date.today()}, {dev}")
    print(f"# {args.rounds} round-robin rounds, medians (ms); TFLOP/s in brackets")
    print("| M x N x K | " + " | ".join(systems) + " | tawac (ttir) / triton |")
    print("|---|" + "---:|" * (len(systems) + 1))
    for size in args.sizes.split(","):
        m, n, k = (int(x) for x in size.split("x"))
        torch.manual_seed(0)
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        ref = a.float() @ b.float()
        outs = {
            s: torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16) for s in systems
        }
        for s, fn in systems.items():
            fn(a, b, outs[s])
            torch.cuda.synchronize()
            err = ((outs[s].float() - ref).abs().max() / ref.abs().max()).item()
            if not err < 2e-3:
                print(f"{s} at {size}: wrong result (max relative error {err})")
                return 1
        names = list(systems)
        samples: dict[str, list[float]] = {s: [] for s in names}
        for i in round_robin(len(names), args.rounds):
            s = names[i]
            call = _bound(systems[s], a, b, outs[s])
            samples[s].append(bench_ms(call, 25.0, 100.0)[0])
        ms = {s: statistics.median(v) for s, v in samples.items()}
        flops = 2.0 * m * n * k
        cells = [f"{ms[s]:.4f} ({flops / ms[s] / 1e9:.0f})" for s in names]
        print(f"| {size} | " + " | ".join(cells) + f" | {ms['triton'] / ms['tawac (ttir)']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
