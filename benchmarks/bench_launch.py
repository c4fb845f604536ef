"""Host time of one launch from PyTorch: tawac against Triton and torch, same run.

    python3 benchmarks/bench_launch.py [--calls 400] [--json out.json]

A small GEMM (C = A B^T, bf16, 128 x 256 x 64: one CTA, a few microseconds on the GPU)
is launched by tawac (the `gemm.mlir` example), by a Triton kernel of the same product and
by `torch.mm(out=)`. Each call's host time is measured alone (perf_counter around the
call, the queue drained every 50 calls so that it never blocks the host) and the median
is reported, for two cases:

- same: every call gets the same tensors (what a training loop sees);
- fresh: every call gets other tensors than the call before (16 sets taken in turn, as a
  loop whose caching allocator hands the same blocks out again sees them);
- cold: 128 sets taken in turn, more than tawac keeps parameters for (`SEEN_CALLS`), so
  every tawac call checks its arguments and encodes its tensor maps anew.

tawac is measured twice more through `tawac.torch` (the PyTorch-facing callable): in place
(`op(a, b, c)`) and functional (`c = op(a, b)`, which allocates the output); and the
Triton kernel compiled by tawac (`tawac.triton.compile`), called as Triton's is.

Prints a table (microseconds, lower is better) and the ratios to Triton.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tawac.driver import compile_file  # noqa: E402
from tawac.runtime import load_kernel  # noqa: E402

M, N, K = 128, 256, 64
SETS = 16
COLD_SETS = 128


def _triton_gemm():
    import triton
    import triton.language as tl

    @triton.jit
    def gemm_abt(a, b, c, m, n, k, sam, sbn, scm, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):  # fmt: skip
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, k, BK):
            x = tl.load(a + rm[:, None] * sam + (k0 + rk)[None, :],
                        mask=(rm[:, None] < m) & ((k0 + rk)[None, :] < k), other=0.0)  # fmt: skip
            y = tl.load(b + rn[:, None] * sbn + (k0 + rk)[None, :],
                        mask=(rn[:, None] < n) & ((k0 + rk)[None, :] < k), other=0.0)  # fmt: skip
            acc += tl.dot(x, tl.trans(y))
        tl.store(c + rm[:, None] * scm + rn[None, :], acc.to(tl.bfloat16),
                 mask=(rm[:, None] < m) & (rn[None, :] < n))  # fmt: skip

    def launch(a, b, c):
        gemm_abt[(1, 2)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), 128, 128, 64)

    import tawac.triton

    sig = {"a": "*bf16", "b": "*bf16", "c": "*bf16", **dict.fromkeys(("m", "n", "k"), "i32")}
    sig |= dict.fromkeys(("sam", "sbn", "scm"), "i32")
    ours = tawac.triton.compile(
        gemm_abt, signature=sig, constexprs={"BM": 128, "BN": 128, "BK": 64}
    )

    def launch_tawac(a, b, c):
        ours[(1, 2)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))

    return launch, launch_tawac


def _host_us(fn, sets, calls: int) -> float:
    for args in sets[:4]:
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for i in range(calls):
        args = sets[i % len(sets)]
        t0 = time.perf_counter_ns()
        fn(*args)
        times.append(time.perf_counter_ns() - t0)
        if i % 50 == 49:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return statistics.median(times) / 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--json", default=None)
    p.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the pieces of tawac's same-tensor call: the bare cuLaunchKernel "
        "(ctypes, parameters ready), the stream and device lookups, the call key",
    )
    args = p.parse_args()

    def operands():
        return (
            torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
            torch.randn(N, K, device="cuda", dtype=torch.bfloat16),
            torch.empty(M, N, device="cuda", dtype=torch.bfloat16),
        )

    sets = [operands() for _ in range(COLD_SETS)]
    r = compile_file(ROOT / "examples" / "gemm.mlir")
    tawac_kernel = load_kernel(r.cubin, r.sidecar)
    triton_launch, tawac_triton = _triton_gemm()

    def torch_mm(a, b, c):
        torch.mm(a, b.T, out=c)

    import tawac.torch

    op = tawac.torch.kernel(ROOT / "examples" / "gemm.mlir", tuning=None)

    def op_functional(a, b, c):
        return op(a, b)

    launchers = {
        "tawac": tawac_kernel,
        "tawac.torch": op,
        "tawac.torch functional": op_functional,
        "triton": triton_launch,
        "tawac.triton": tawac_triton,
        "torch.mm": torch_mm,
    }
    for name, fn in launchers.items():  # correctness of what is timed
        a, b, c = sets[0]
        c.fill_(float("nan"))
        out = fn(a, b, c)
        c = out if out is not None else c
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"{name}: wrong result (relative error {err:.2e})")

    rows = {}
    for case, case_sets in (("same", sets[:1]), ("fresh", sets[:SETS]), ("cold", sets)):
        rows[case] = {name: _host_us(fn, case_sets, args.calls) for name, fn in launchers.items()}
    device = torch.cuda.get_device_name()
    print(f"host time of one launch, microseconds (median of {args.calls} calls), {device}")
    print(
        "| case | tawac Kernel | tawac.torch (in place) | tawac.torch (functional) | Triton "
        "| tawac.triton | torch.mm | Kernel/Triton | tawac.torch/Triton | tawac.triton/Triton |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, row in rows.items():
        print(
            f"| {case} | {row['tawac']:.1f} | {row['tawac.torch']:.1f} "
            f"| {row['tawac.torch functional']:.1f} | {row['triton']:.1f} "
            f"| {row['tawac.triton']:.1f} | {row['torch.mm']:.1f} "
            f"| {row['tawac'] / row['triton']:.2f} | {row['tawac.torch'] / row['triton']:.2f} "
            f"| {row['tawac.triton'] / row['triton']:.2f} |"
        )
    if args.breakdown:
        print(breakdown(tawac_kernel, sets[0], args.calls))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=1))


def breakdown(kernel, args, calls: int) -> str:
    """Medians (µs) of the pieces of a same-tensor call, each timed alone."""
    from tawac.runtime.cuda_driver import _lib
    from tawac.runtime.graphs import _stream_handle
    from tawac.runtime.plans import _call_key, _shape_key

    kernel(*args)  # leaves the arena filled for these tensors
    torch.cuda.synchronize()
    lib = _lib()
    func, grid = kernel._last[1]
    dev = torch.cuda.current_device()
    handle = _stream_handle(None, dev)
    block, smem, params = kernel.block, kernel.dynamic_smem, kernel._layout.address
    plan = next(iter(kernel._plans.values()))
    pieces = {
        "whole call": lambda: kernel(*args),
        "cuLaunchKernel (ctypes)": lambda: lib.launch(int(func), grid, block, smem, handle, params),
        "torch.cuda.current_device": torch.cuda.current_device,
        "stream handle": lambda: _stream_handle(None, dev),
        "call key": lambda: _call_key(args, handle, dev),
        "cold: shape key": lambda: _shape_key(_call_key(args, handle, dev)),
        "cold: plan apply (pointers, scalars, tensor maps)": lambda: plan.apply(
            kernel._layout, args, lib
        ),
        "cold: parameter snapshot": kernel._layout.snapshot,
        "empty python call": lambda: None,
    }
    lines = ["| piece of a same-tensor call | µs |", "|---|---:|"]
    for name, fn in pieces.items():
        lines.append(f"| {name} | {_host_us(lambda fn=fn: fn(), [()], calls):.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from results import run_recorded

    run_recorded("launch", main)
