"""fp8 GEMM benchmark: tawac (examples/gemm_fp8.mlir) vs cuBLAS (torch._scaled_mm), e4m3.

C = (A * B^T) * scale_a * scale_b with A MxK and B NxK in f8E4M3FN (both K-major), fp32
accumulation, per-tensor f32 scales, bf16 output; cuBLAS gets the same operands
(`torch._scaled_mm(a, b.t(), scale_a=..., scale_b=..., out_dtype=torch.bfloat16)`: B
column-major is the transpose of the row-major NxK tensor). Prints TFLOP/s (median of
`tawac.runtime.runner.bench_ms`: triton.testing.do_bench where Triton is installed), the
ratio, and each output's relative error against the float32 product of the dequantised
inputs. Every shape runs in the same process, one after the other; at each, the two
systems are timed --rounds times round-robin.

    python3 benchmarks/bench_gemm_fp8.py                     # 4096^3 and 8192^3
    python3 benchmarks/bench_gemm_fp8.py --markdown          # table for docs/perf.md
    python3 benchmarks/bench_gemm_fp8.py --shapes 4096x4096x4096 -D BLOCK_N=128 --opt stages=4
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gemm import (  # noqa: E402
    Row,
    _fmt,
    measure_rounds,
    parse_opts,
    parse_shapes,
    print_table,
    rel_error,
    write_json,
)

from tawac.runtime import load_kernel  # noqa: E402
from tawac.support.params import parse_defines  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
TOL = 2e-2
SCALE_A, SCALE_B = 0.5, 2.0


def fp8_inputs(m: int, n: int, k: int):
    """A (MxK) and B (NxK) in e4m3: N(0, 1) drawn in float32, rounded."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    return a, b


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The float32 product of the dequantised inputs times the scales, TF32 off."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return (a.float() @ b.float().t()) * (SCALE_A * SCALE_B)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def cublas_fp8(a: torch.Tensor, b: torch.Tensor):
    """cuBLAS's fp8 GEMM through torch._scaled_mm: a callable writing a new bf16 C."""
    sa = torch.tensor(SCALE_A, device="cuda", dtype=torch.float32)
    sb = torch.tensor(SCALE_B, device="cuda", dtype=torch.float32)
    bt = b.t()  # column-major KxN view of the row-major NxK tensor, as cuBLAS wants

    def run():
        out = torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        return out[0] if isinstance(out, tuple) else out

    return run


def bench_shape(shape, kernel, compile_error: str | None, bench_args, rounds: int = 1) -> Row:
    """Checks cuBLAS fp8 and tawac against the float32 product at one (M, N, K), then
    times both (`measure_rounds`)."""
    m, n, k = shape
    row = Row(tuple(shape))
    flops = 2.0 * m * n * k
    a, b = fp8_inputs(m, n, k)
    ref = reference(a, b)
    calls = {}

    if not hasattr(torch, "_scaled_mm"):
        row.tflops["cublas"] = None
        row.errors["cublas"] = "this torch has no torch._scaled_mm"
    else:
        try:
            blas = cublas_fp8(a, b)
            row.rel_err["cublas"] = rel_error(blas(), ref)
            calls["cublas"] = blas
        except Exception as e:  # noqa: BLE001
            row.tflops["cublas"] = None
            row.errors["cublas"] = f"{type(e).__name__}: {e}"

    if kernel is None:
        row.tflops["tawac"] = None
        row.errors["tawac"] = compile_error or "not compiled"
    else:
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        try:
            kernel(a, b, c, SCALE_A, SCALE_B)
            torch.cuda.synchronize()
            row.rel_err["tawac"] = rel_error(c, ref)
            calls["tawac"] = lambda: kernel(a, b, c, SCALE_A, SCALE_B)
        except Exception as e:  # noqa: BLE001
            row.tflops["tawac"] = None
            row.errors["tawac"] = f"{type(e).__name__}: {e}"
    del ref
    measure_rounds(row, calls, flops, bench_args, rounds)
    return row


def table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    header = [
        "M x N x K",
        "tawac fp8 TFLOP/s",
        "cuBLAS fp8 TFLOP/s",
        "tawac/cuBLAS",
        "tawac rel. err",
        "cuBLAS rel. err",
    ]
    cells = []
    for r in rows:
        t, c = r.tflops.get("tawac"), r.tflops.get("cublas")
        ratio = "—" if t is None or c is None else f"{t / c:.2f}"
        errs = []
        for name in ("tawac", "cublas"):
            e = r.rel_err.get(name)
            errs.append("—" if e is None else f"{e:.1e} {'ok' if e <= TOL else 'FAIL'}")
        cells.append(["x".join(map(str, r.shape)), _fmt(t), _fmt(c), ratio, *errs])
    return header, cells


def print_report(rows: list[Row], meta: dict, markdown: bool) -> None:
    header, cells = table(rows)
    title = f"fp8 (e4m3) GEMM C = A·Bᵀ·sa·sb, bf16 out, on {meta['device']}, {meta['date']}"
    versions = f"torch {meta['torch']}, CUDA {meta['cuda']}; tawac {meta['config']}"
    notes = [
        versions,
        f"median of {meta['rounds']} round-robin round(s) of {meta['timer']}",
        "error vs the fp32 dequantised product",
    ]
    print_table(rows, header, cells, title, notes, markdown)
    from results import record  # benchmarks/results.py: benchmarks/results/gemm_fp8-*.json

    record("gemm_fp8", header, cells, title)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kernel", type=Path, default=ROOT / "examples" / "gemm_fp8.mlir")
    p.add_argument("--shapes", help="comma-separated MxNxK list (default: 4096^3 and 8192^3)")
    p.add_argument("-D", dest="params", action="append", default=[], help="kernel parameter")
    p.add_argument("--opt", action="append", default=[], help="compile option key=value")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="time both systems this many times round-robin and take the median",
    )
    args = p.parse_args(argv)

    if not torch.cuda.is_available():
        print("bench_gemm_fp8: no CUDA device", file=sys.stderr)
        return 2
    shapes = parse_shapes(args.shapes) if args.shapes else SHAPES
    params, options = parse_defines(args.params), parse_opts(args.opt)
    kernel, error, sidecar = None, None, {}
    try:
        from tawac.driver import compile_file

        art = compile_file(args.kernel, params=params or None, schedule="heuristic", **options)
        kernel, sidecar = load_kernel(art.cubin, art.sidecar), art.sidecar
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        error = f"compile: {type(e).__name__}: {e}"
    timer = "triton.testing.do_bench" if importlib.util.find_spec("triton") else "cuda events"
    meta = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "timer": timer,
        "rounds": args.rounds,
        "config": json.dumps({**sidecar.get("kernel_params", {}), **options}),
    }
    rows = []
    for shape in shapes:
        try:
            bench_args = (args.warmup_ms, args.rep_ms)
            rows.append(bench_shape(shape, kernel, error, bench_args, args.rounds))
        except Exception as e:  # noqa: BLE001 - e.g. out of memory for the inputs
            row = Row(tuple(shape))
            row.errors["setup"] = f"{type(e).__name__}: {e}"
            rows.append(row)
        torch.cuda.empty_cache()
    print_report(rows, meta, args.markdown)
    if args.json is not None:
        write_json(args.json, meta, rows)
    ok = all(r.rel_err.get("tawac", float("inf")) <= TOL for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("gemm_fp8", main, printed=False))
