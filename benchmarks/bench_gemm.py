"""GEMM benchmark: tawac (examples/gemm.mlir) vs cuBLAS (torch.matmul) vs Triton, bf16.

C = A * B^T with A MxK, B NxK (both K-major), C MxN, fp32 accumulation, bf16 output.
Prints TFLOP/s (the median of --rounds rounds of triton.testing.do_bench, every system
timed once per round, round-robin), the ratios, and the relative error of
tawac's and Triton's outputs against an fp32 reference.

    python3 benchmarks/bench_gemm.py                 # plain table
    python3 benchmarks/bench_gemm.py --markdown      # table for docs/perf.md
    python3 benchmarks/bench_gemm.py --shapes 4096x4096x4096 --opt stages=4 --json out.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tawac.runtime import load_kernel  # noqa: E402
from tawac.runtime.runner import bench_ms, round_robin  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (16384, 16384, 4096)]
TOL = 1e-2

# --------------------------------------------------------------------------- Triton


def _make_triton_matmul():
    """A standard tl.dot matmul with grouped tile order and a small autotune; None if no Triton."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    configs = [
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=4, num_warps=8),
        triton.Config({"BM": 256, "BN": 128, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "GM": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 128, "BN": 128, "BK": 128, "GM": 8}, num_stages=3, num_warps=8),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(
        a_ptr, b_ptr, c_ptr, M, N, K,
        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr,
    ):  # fmt: skip
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BM)
        num_pid_n = tl.cdiv(N, BN)
        group = GM * num_pid_n
        first_m = (pid // group) * GM
        size_m = min(num_pid_m - first_m, GM)
        pid_m = first_m + (pid % group) % size_m
        pid_n = (pid % group) // size_m
        offs_m = (pid_m * BM + tl.arange(0, BM)) % M
        offs_n = (pid_n * BN + tl.arange(0, BN)) % N
        offs_k = tl.arange(0, BK)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
        c = acc.to(c_ptr.dtype.element_ty)
        cm = pid_m * BM + tl.arange(0, BM)
        cn = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
        tl.store(c_ptrs, c, mask=(cm[:, None] < M) & (cn[None, :] < N))

    def matmul_abt(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        """c = a @ b.T for a (M, K), b (N, K)."""
        m, k = a.shape
        n = b.shape[0]
        bt = b.t()

        def grid(meta):
            return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

        matmul_kernel[grid](
            a, bt, c, m, n, k,
            a.stride(0), a.stride(1), bt.stride(0), bt.stride(1), c.stride(0), c.stride(1),
        )  # fmt: skip

    return matmul_abt


def _make_triton_tma_ws_matmul():
    """Triton's descriptor (TMA) matmul with automatic warp specialization, the form of
    its tutorial 09 that won the baselines in ../shared/reference/baselines.md; None if
    this Triton lacks tensor descriptors."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None
    if not hasattr(tl, "make_tensor_descriptor") or not hasattr(triton, "set_allocator"):
        return None

    def alloc(size: int, alignment: int, stream):
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)
    configs = [
        triton.Config(
            {"BM": 128, "BN": 256, "BK": 64, "GM": 8, "WS": ws}, num_stages=s, num_warps=8
        )
        for ws in (True, False)
        for s in (3, 4)
    ] + [
        triton.Config(
            {"BM": 128, "BN": 128, "BK": 64, "GM": 8, "WS": True}, num_stages=4, num_warps=4
        ),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_tma(
        a_ptr, b_ptr, c_ptr, M, N, K,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr,
        WS: tl.constexpr,
    ):  # fmt: skip
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BM)
        num_pid_n = tl.cdiv(N, BN)
        group = GM * num_pid_n
        first_m = (pid // group) * GM
        size_m = min(num_pid_m - first_m, GM)
        pid_m = first_m + (pid % group) % size_m
        pid_n = (pid % group) // size_m
        a_desc = tl.make_tensor_descriptor(
            a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK]
        )
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK]
        )
        c_desc = tl.make_tensor_descriptor(
            c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN]
        )
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))

    def matmul_abt(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        m, k = a.shape
        n = b.shape[0]

        def grid(meta):
            return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

        matmul_tma[grid](a, b, c, m, n, k)

    return matmul_abt


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    """Results for one shape; a None TFLOP/s comes with an error message."""

    shape: tuple[int, int, int]
    tflops: dict[str, float | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    rel_err: dict[str, float] = field(default_factory=dict)


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64 (NaN when out has NaN)."""
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def fp32_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b.T in true fp32 (TF32 off)."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a.float() @ b.float().t()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def measure(row: Row, name: str, fn, flops: float, args) -> None:
    """Times fn(); records TFLOP/s or the error."""
    try:
        ms, _ = bench_ms(fn, *args)
        row.tflops[name] = flops / (ms * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001 - a failing system must not stop the table
        row.tflops[name] = None
        row.errors[name] = f"{type(e).__name__}: {e}"


def measure_rounds(row: Row, calls: dict, flops: float, args, rounds: int) -> None:
    """Times every system in `calls` (name -> fn) `rounds` times round-robin
    (`tawac.runtime.runner.round_robin`) and records each one's median."""
    names = list(calls)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for name in (names[i] for i in round_robin(len(names), rounds)):
        if name in row.errors:
            continue
        measure(row, name, calls[name], flops, args)
        if row.tflops[name] is not None:
            samples[name].append(row.tflops[name])
    for name in names:
        if samples[name]:
            row.tflops[name] = statistics.median(samples[name])


def bench_shape(shape, tawac_kernels: dict, triton_mm, bench_args, rounds: int = 1) -> Row:
    """Benchmarks one (M, N, K) for every system (`tawac_kernels`: name -> (kernel,
    compile error): "tawac", and "solver" with --solver): checks each output against an
    fp32 reference, then times them all (`measure_rounds`)."""
    m, n, k = shape
    row = Row(shape)
    flops = 2.0 * m * n * k
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=gen).to(torch.bfloat16)
    ref = fp32_reference(a, b)

    c_blas = torch.matmul(a, b.t())
    row.rel_err["cublas"] = rel_error(c_blas, ref)
    calls = {"cublas": lambda: torch.matmul(a, b.t(), out=c_blas)}

    for name, (kernel, error) in tawac_kernels.items():
        if kernel is None:
            row.tflops[name] = None
            row.errors[name] = error or "not compiled"
            continue
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        try:
            kernel(a, b, c)
            torch.cuda.synchronize()
            row.rel_err[name] = rel_error(c, ref)
            calls[name] = lambda c=c, kernel=kernel: kernel(a, b, c)
        except Exception as e:  # noqa: BLE001
            row.tflops[name] = None
            row.errors[name] = f"{type(e).__name__}: {e}"

    if not triton_mm:
        row.tflops["triton"] = None
        row.errors["triton"] = "triton not installed"
    for name, fn in (triton_mm or {}).items():
        c = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
        try:
            fn(a, b, c)
            torch.cuda.synchronize()
            row.rel_err[name] = rel_error(c, ref)
            calls[name] = lambda fn=fn, c=c: fn(a, b, c)
        except Exception as e:  # noqa: BLE001
            row.tflops[name] = None
            row.errors[name] = f"{type(e).__name__}: {e}"
    del ref
    measure_rounds(row, calls, flops, bench_args, rounds)
    # The Triton column is the better of its two kernels, measured in this run.
    best = [(row.tflops.get(k), k) for k in (triton_mm or {}) if row.tflops.get(k) is not None]
    if best:
        value, name = max(best)
        row.tflops["triton"] = value
        row.rel_err["triton"] = row.rel_err[name]
        row.errors.pop("triton", None)
    elif triton_mm:
        row.tflops["triton"] = None
        row.errors["triton"] = "; ".join(row.errors.get(k, "") for k in triton_mm)
    return row


# --------------------------------------------------------------------------- output


def _fmt(x: float | None, spec: str = ".0f") -> str:
    return "—" if x is None else format(x, spec)


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:.2f}"


def _check(row: Row) -> str:
    errs = [row.rel_err[k] for k in ("tawac", "solver", "tuned") if row.rel_err.get(k) is not None]
    if not errs:
        return "—"
    err = max(errs)
    verdict = "ok" if err <= TOL else "FAIL"
    return f"{err:.1e} {verdict}"


def table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Header and cells (the solver's and the tuned kernel's columns when measured)."""
    solver = any("solver" in r.tflops for r in rows)
    tuned = any("tuned" in r.tflops for r in rows)
    header = [
        "M x N x K",
        "tawac TFLOP/s",
        *(["tuned TFLOP/s"] if tuned else []),
        *(["solver TFLOP/s"] if solver else []),
        "cuBLAS TFLOP/s",
        "Triton TFLOP/s",
        "tawac/cuBLAS",
        *(["tuned/cuBLAS", "tuned/tawac"] if tuned else []),
        *(["solver/cuBLAS", "solver/tawac"] if solver else []),
        "tawac/Triton",
        "tawac rel. err",
    ]
    cells = []
    for r in rows:
        t, c, tr = r.tflops.get("tawac"), r.tflops.get("cublas"), r.tflops.get("triton")
        sv, tu = r.tflops.get("solver"), r.tflops.get("tuned")
        cells.append(
            [
                "x".join(map(str, r.shape)),
                _fmt(t) if t is not None else "error",
                *([_fmt(tu) if tu is not None else "error"] if tuned else []),
                *([_fmt(sv) if sv is not None else "error"] if solver else []),
                _fmt(c) if c is not None else "error",
                _fmt(tr) if tr is not None else "error",
                _ratio(t, c),
                *([_ratio(tu, c), _ratio(tu, t)] if tuned else []),
                *([_ratio(sv, c), _ratio(sv, t)] if solver else []),
                _ratio(t, tr),
                _check(r),
            ]
        )
    return header, cells


def print_table(
    rows: list, header: list[str], cells: list[list[str]], title: str, lines: list[str], markdown
) -> None:
    """A benchmark's table (markdown or aligned text) under its title and notes, then the
    errors of its rows (`row.shape`, `row.errors`); bench_gemm_fp8.py uses it too."""
    if markdown:
        print(f"### {title}\n")
        print("; ".join(lines) + ".\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|")
        for row in cells:
            print("| " + " | ".join(row) + " |")
    else:
        print(title)
        print("; ".join(lines))
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
        print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
        for row in cells:
            print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    notes = [
        f"{'x'.join(map(str, r.shape))} {name}: {msg.splitlines()[0][:300]}"
        for r in rows
        for name, msg in r.errors.items()
    ]
    if notes:
        print("\nErrors:" if not markdown else "\nErrors:\n")
        for n in notes:
            print(f"- {n}")


def print_report(rows: list[Row], meta: dict, markdown: bool) -> None:
    """Prints the table, then any errors."""
    header, cells = table(rows)
    title = f"bf16 GEMM C = A·Bᵀ on {meta['device']}, {meta['date']}"
    versions = f"torch {meta['torch']}, triton {meta['triton']}, CUDA {meta['cuda']}"
    rounds = meta.get("rounds", 1)
    notes = [
        versions,
        f"median of {rounds} round-robin round(s) of triton.testing.do_bench",
        "error vs fp32 reference",
    ]
    print_table(rows, header, cells, title, notes, markdown)
    from results import record  # benchmarks/results.py: benchmarks/results/gemm-*.json

    record("gemm", header, cells, title)


def write_json(path: Path, meta: dict, rows: list[Row]) -> None:
    """The run's metadata and rows as JSON (bench_gemm_fp8.py writes the same form)."""
    data = {
        "meta": meta,
        "rows": [
            {"shape": r.shape, "tflops": r.tflops, "rel_err": r.rel_err, "errors": r.errors}
            for r in rows
        ],
    }
    path.write_text(json.dumps(data, indent=2))


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    """`MxNxK,MxNxK,...` as (M, N, K) tuples."""
    return [tuple(int(x) for x in shape.split("x")) for shape in text.split(",")]


def parse_opts(items: list[str]) -> dict:
    """`key=value` compile options: a pipeline knob (`mma-depth` or `mma_depth`) takes its
    type's values (`tawac.support.options.Knob.parse`: `persistent=false`, `stages=4`); any other
    key (a kernel parameter) a JSON value where it parses as one, else the text."""
    from tawac.support.options import knob

    out = {}
    for item in items:
        key, _, value = item.partition("=")
        k = knob(key)
        if k is not None:
            out[k.name] = k.parse(value)
            continue
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def compile_tawac(path: Path, options: dict):
    """(kernel, None) or (None, error message)."""
    try:
        from tawac.driver import compile_file

        art = compile_file(path, **options)
        return load_kernel(art.cubin, art.sidecar), None
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        return None, f"compile: {type(e).__name__}: {e}"


_tuned: dict[str, tuple] = {}


def tuned_kernel(path: Path, table: dict, shape, options: dict):
    """(kernel, error) of the configuration the tuning table picks for (M, N, K)."""
    from tawac.schedule.tuning import pick

    m, n, k = shape
    picked = pick(table, {"M": m, "N": n, "K": k})
    if picked is None:
        return None, "no tuning table entry"
    params, opts = picked
    key = json.dumps([params, opts], sort_keys=True)
    if key not in _tuned:
        print(f"tuned {m}x{n}x{k}: params {params} options {opts}", file=sys.stderr)
        _tuned[key] = compile_tawac(
            path, {**options, **opts, "schedule": "heuristic", "params": params}
        )
    return _tuned[key]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kernel", type=Path, default=ROOT / "examples" / "gemm.mlir")
    p.add_argument("--shapes", help="comma-separated MxNxK list (default: the four standard)")
    p.add_argument("--opt", action="append", default=[], help="compile option key=value")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--json", type=Path, help="also write the results as JSON")
    p.add_argument("--no-triton", action="store_true")
    p.add_argument(
        "--solver",
        action="store_true",
        help="also time the kernel compiled with --schedule solver (same run)",
    )
    p.add_argument(
        "--tuned",
        type=Path,
        help="also time the configuration a tuning table (tawac tune) picks for each shape",
    )
    p.add_argument("--warmup-ms", type=float, default=25.0)
    p.add_argument("--rep-ms", type=float, default=100.0)
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="time every system this many times round-robin and take the median",
    )
    args = p.parse_args(argv)

    if not torch.cuda.is_available():
        print("bench_gemm: no CUDA device", file=sys.stderr)
        return 2
    shapes = parse_shapes(args.shapes) if args.shapes else SHAPES
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "absent"
    meta = {
        "device": torch.cuda.get_device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "rounds": args.rounds,
    }
    options = parse_opts(args.opt)
    kernels = {"tawac": compile_tawac(args.kernel, {**options, "schedule": "heuristic"})}
    if args.solver:
        kernels["solver"] = compile_tawac(args.kernel, {**options, "schedule": "solver"})
    triton_mm: dict = {}
    if not args.no_triton:
        for name, make in (
            ("triton_ptr", _make_triton_matmul),
            ("triton_tma_ws", _make_triton_tma_ws_matmul),
        ):
            fn = make()
            if fn is not None:
                triton_mm[name] = fn
    table = None
    if args.tuned is not None:
        from tawac.schedule.tuning import load_table

        table = load_table(args.tuned)
    rows = []
    for shape in shapes:
        shape_kernels = dict(kernels)
        if table is not None:
            shape_kernels["tuned"] = tuned_kernel(args.kernel, table, shape, options)
        try:
            rows.append(
                bench_shape(
                    shape, shape_kernels, triton_mm, (args.warmup_ms, args.rep_ms), args.rounds
                )
            )
        except Exception as e:  # noqa: BLE001 - e.g. out of memory for the inputs
            row = Row(tuple(shape))
            row.errors["setup"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            torch.cuda.empty_cache()
    print_report(rows, meta, args.markdown)
    if args.json is not None:
        write_json(args.json, meta, rows)
    ok = all(r.rel_err.get(k, float("inf")) <= TOL for r in rows for k in kernels)
    return 0 if ok else 1


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("gemm", main, printed=False))
