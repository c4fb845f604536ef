"""Run a tile kernel file on the GPU: random inputs, launch, check against the interpreter, time.

This is the engine of `tawac run`.  Compilation is injected: `compile_fn(path)` returns
`(cubin_bytes, sidecar_dict, kernel_op)` where `kernel_op` is the parsed `tile.kernel` op
the interpreter runs as the reference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tawac.runtime.arguments import FLOAT_SCALAR_DTYPES, FP8_DTYPES, TENSOR_DTYPES, LaunchError
from tawac.runtime.launcher import load_kernel
from tawac.runtime.plans import compute_grid
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER

DEFAULT_F32_SCALAR = 0.5
DEFAULT_INT_SCALAR = 1


def require_hopper(command: str, purpose: str = "", hint: str = "") -> None:
    """A clear error unless torch sees a Hopper GPU: `command` ("tawac run") needs one
    `purpose` (" to time candidates"); `hint` ends each message."""
    try:
        import torch
    except ImportError:
        raise CompileError(
            f"{command} needs PyTorch with CUDA{purpose} (torch is not installed){hint}"
        ) from None
    if not torch.cuda.is_available():
        raise CompileError(
            f"{command} needs an NVIDIA Hopper GPU{purpose}; torch sees no CUDA device{hint}"
        )
    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        raise CompileError(
            f"{command} needs a Hopper GPU ({HOPPER.name}); this device is sm_{major}{minor}{hint}"
        )


def parse_sizes(text: str) -> dict[str, int]:
    """`--size M=4096,N=4096,K=4096` (dimension sizes and scalar arguments by name) as a
    dict; a malformed or repeated item is a `CompileError`."""
    dims: dict[str, int] = {}
    for item in text.split(","):
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            raise CompileError(f"--size expects NAME=INT pairs, got '{item}'")
        if name.strip() in dims:
            raise CompileError(f"--size {text}: {name.strip()} given twice")
        dims[name.strip()] = int(value)
    return dims


def tensor_shape(spec: Mapping[str, Any], sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The shape of a tensor argument from its sidecar "dims" (names or static sizes)."""
    dims = spec.get("dims") or []
    if len(dims) != int(spec["rank"]):
        raise LaunchError(
            f"argument {spec['name']!r} has no dimension names in the sidecar; "
            'name its dimensions in the kernel signature (!tile.tensor<?x?xbf16, ["M", "K"]>)'
        )
    shape = []
    for d in dims:
        if isinstance(d, int):
            shape.append(d)
            continue
        if d not in sizes:
            raise LaunchError(
                f"size {d!r} of argument {spec['name']!r} is not given "
                f"(given: {', '.join(sorted(sizes)) or 'none'})"
            )
        shape.append(int(sizes[d]))
    return tuple(shape)


def logical_grid(
    sidecar: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]
) -> tuple[int, int, int]:
    """The grid of program instances: "program_grid" when the sidecar has one (a
    persistent launch), else the launch "grid"."""
    return compute_grid(sidecar.get("program_grid", sidecar["grid"]), shapes)


def relative_error(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ over the elements the reference defines (finite there).

    NaN when `out` is not finite where the reference is.
    """
    import torch

    out, ref = out.double(), ref.double()
    mask = torch.isfinite(ref)
    o, r = out[mask], ref[mask]
    if not bool(torch.isfinite(o).all()):
        return math.nan
    denom = float(r.norm())
    num = float((o - r).norm())
    if denom == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / denom


def unchecked(out, ref) -> int:
    """Elements of `out` with a value where the reference has none (NaN: no program of
    the reference stored there): `relative_error` cannot compare them, so a check that
    passes must have none."""
    import torch

    return int((torch.isnan(ref) & ~torch.isnan(out)).sum())


@dataclass
class OutputCheck:
    """Each output's comparison with the reference (`check_outputs`)."""

    errors: dict[str, float]  # relative error per output (`relative_error`)
    nan_outputs: list[str]  # NaN where the reference has a value
    unchecked_outputs: list[str]  # a value where the reference has none (`unchecked`)

    @property
    def max_error(self) -> float:
        errs = list(self.errors.values())
        return math.nan if any(math.isnan(e) for e in errs) else max(errs, default=0.0)

    def ok(self, tol: float) -> bool:
        worst = self.max_error
        return not self.nan_outputs and not self.unchecked_outputs and worst <= tol

    def failure(self, tol: float) -> str | None:
        """What is wrong, in words; None where the check passes."""
        if self.nan_outputs:
            return f"NaN in {', '.join(self.nan_outputs)}"
        if self.unchecked_outputs:
            return f"values where the reference stores none in {', '.join(self.unchecked_outputs)}"
        if not self.max_error <= tol:
            return f"relative error {self.max_error:.3g} > {tol:g}"
        return None


def check_outputs(
    args: list, ref_args: list, stores: set[int], specs: list[Mapping[str, Any]]
) -> OutputCheck:
    """The kernel's outputs (`args` at the indices `stores`) against the reference's
    (`ref_args`), by the sidecar's argument names (`specs`)."""
    import torch

    out = OutputCheck({}, [], [])
    for i in sorted(stores):
        name, got, ref = specs[i]["name"], args[i], ref_args[i]
        if bool((torch.isnan(got) & ~torch.isnan(ref)).any()):
            out.nan_outputs.append(name)
        if unchecked(got, ref):
            out.unchecked_outputs.append(name)
        out.errors[name] = relative_error(got, ref)
    return out


def reference(kernel_op, ref_args: list) -> dict[str, int]:
    """Runs the user's program `kernel_op` (unlowered) on `ref_args` (the sidecar's
    arguments, float32 copies: written in place) in the interpreter as a launch of its
    own: on the grid its stores imply, not the compiled kernel's (a pass may group heads
    or split K and change it); returns the interpreter's statistics."""
    from tawac.runtime.interpret import interpret_launch

    return interpret_launch(kernel_op, ref_args)


def round_robin(n: int, rounds: int) -> list[int]:
    """The order in which to time `n` systems `rounds` times: each round once through
    all of them, starting one later than the round before, so that the machine's drift
    (clocks under the power limit, neighbours) falls on every system alike; each
    system's median then compares with the others'."""
    return [(r + i) % n for r in range(max(1, rounds)) for i in range(n)]


def round_robin_medians(
    calls: Mapping[str, Callable[[], Any]],
    rounds: int,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    l2: str = "dirty",
) -> dict[str, float]:
    """Milliseconds per call of each of `calls`, timed `rounds` times round-robin
    (`round_robin`; `timer(l2)`), medians."""
    time = timer(l2)
    names = list(calls)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in round_robin(len(names), rounds):
        samples[names[i]].append(time(calls[names[i]], warmup_ms, rep_ms))
    return {n: statistics.median(v) for n, v in samples.items()}


def bench_ms(fn: Callable[[], Any], warmup_ms: float = 25.0, rep_ms: float = 100.0) -> tuple:
    """(median milliseconds per call, timer name).

    Uses triton.testing.do_bench when triton is importable, else CUDA events around each call
    after `warmup_ms` of warm-up, for about `rep_ms` of timed calls.
    """
    import torch

    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench is not None:
        try:
            return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")), (
                "triton.testing.do_bench"
            )
        except TypeError:  # older triton: no return_mode
            return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.5])), (
                "triton.testing.do_bench"
            )
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / est))):
        fn()
    times = []
    for _ in range(max(5, int(rep_ms / est))):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        times.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in times), "cuda events"


#: Bytes read before each call of `bench_clean_ms`: five times the H100's 50 MB L2.
FLUSH_BYTES = 256 << 20


def bench_clean_ms(fn: Callable[[], Any], rep_ms: float = 50.0, flush=None) -> float:
    """Median milliseconds per call of `fn` with a cold and clean L2: before each call the
    L2 is emptied by reading `FLUSH_BYTES` (a sum into a preallocated scalar), not by
    writing them as `triton.testing.do_bench` does (a 256 MB memset: the L2 is then full
    of dirty lines, which the timed call writes back to memory as it evicts them, about
    50 MB of writes on top of its own traffic). CUDA events around the call only. `flush`:
    the buffer to read (float32, at least `FLUSH_BYTES`), to share one between calls."""
    import torch

    if flush is None:
        flush = torch.ones(FLUSH_BYTES // 4, device="cuda", dtype=torch.float32)
    sink = torch.empty((), device="cuda", dtype=torch.float32)
    fn()
    torch.sum(flush, dim=0, out=sink)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(end), 1e-3)
    times = []
    for _ in range(max(10, int(rep_ms / est))):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.sum(flush, dim=0, out=sink)
        s.record()
        fn()
        e.record()
        times.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in times)


#: How the L2 is emptied before each timed call (`timer`): "dirty", `bench_ms`
#: (`triton.testing.do_bench`'s 256 MB memset: the call also writes back the dirty lines
#: it evicts, about 50 MB on an H100), or "clean", `bench_clean_ms` (a 256 MB read: only
#: the call's own traffic; a decode step's L2 holds clean weights, not dirty lines).
L2_MODES = ("dirty", "clean")


def timer(l2: str = "dirty") -> Callable[[Callable[[], Any], float, float], float]:
    """`time(fn, warmup_ms, rep_ms)`: milliseconds per call of `fn` (a median), with the L2
    emptied before each call as `l2` says (`L2_MODES`); "clean" reads one flush buffer,
    allocated here, for every call it times."""
    if l2 not in L2_MODES:
        raise ValueError(f"l2 {l2!r}: one of {', '.join(L2_MODES)}")
    if l2 == "dirty":
        return lambda fn, warmup_ms, rep_ms: bench_ms(fn, warmup_ms, rep_ms)[0]
    import torch

    flush = torch.ones(FLUSH_BYTES // 4, device="cuda", dtype=torch.float32)
    return lambda fn, warmup_ms, rep_ms: bench_clean_ms(fn, rep_ms, flush)


def index_values(spec: str, shape: tuple[int, ...], sizes: Mapping[str, int]):
    """An i32 index tensor of `shape` a benchmark names (a corpus entry's `indices`):
    `arange`, 0, 1, 2, ... in row-major order (a paged cache's block table: each
    sequence its own pages); else a product of dimension names and integers
    (`MAXP*PAGE`: each sequence's full length), every element that value."""
    import torch

    if spec == "arange":
        return torch.arange(math.prod(shape), dtype=torch.int64).reshape(shape)
    value = 1
    for factor in spec.split("*"):
        factor = factor.strip()
        if factor.isdigit():
            value *= int(factor)
        elif factor in sizes:
            value *= int(sizes[factor])
        else:
            raise ValueError(f"index values '{spec}': '{factor}' is no size nor integer")
    return torch.full(shape, value, dtype=torch.int64)


def make_args(
    sidecar: Mapping[str, Any],
    sizes: Mapping[str, int],
    outputs: set[int],
    inputs: set[int],
    *,
    seed: int = 0,
    scale: float = 0.5,
    device: str = "cuda",
    indices: Mapping[str, str] | None = None,
) -> list:
    """Kernel arguments in sidecar order: random tensors (scale * N(0, 1), drawn in float32;
    fp8 ones clamped to the format's finite range, then rounded; i32 index tensors all 0,
    an index valid for any tensor, unless `indices` names them: `index_values`),
    NaN-filled pure outputs, scalars from `sizes` when named there, else 0.5 (f32) or 1
    (integers)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    args: list = []
    for i, spec in enumerate(sidecar["args"]):
        if spec["kind"] == "scalar":
            default = (
                DEFAULT_F32_SCALAR if spec["dtype"] in FLOAT_SCALAR_DTYPES else DEFAULT_INT_SCALAR
            )
            value = sizes.get(spec["name"], default)
            is_float = spec["dtype"] in FLOAT_SCALAR_DTYPES
            args.append(float(value) if is_float else int(value))
            continue
        shape = tensor_shape(spec, sizes)
        dtype = getattr(torch, TENSOR_DTYPES[spec["dtype"]][0])
        if i in outputs and i not in inputs:
            args.append(torch.full(shape, math.nan, dtype=dtype, device=device))
            continue
        if spec["dtype"] == "i32" and spec["name"] in (indices or {}):
            values = index_values(indices[spec["name"]], shape, sizes)
            args.append(values.to(dtype=dtype, device=device))
            continue
        if spec["dtype"] == "i32":  # indices (tile.load_index): 0, valid for any tensor
            args.append(torch.zeros(shape, dtype=dtype, device=device))
            continue
        t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale
        if spec["dtype"] in FP8_DTYPES:
            finite = torch.finfo(dtype).max
            t = t.clamp(-finite, finite)
        args.append(t.to(dtype))
    return args


def run_kernel_file(
    path: str | Path,
    sizes: Mapping[str, int],
    dtype: str | None,
    compile_fn: Callable[[str | Path], tuple[bytes, Mapping[str, Any], Any]],
    *,
    check: bool = True,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    flops: float | None = None,
    tol: float = 2e-2,
    seed: int = 0,
    trace_out: str | Path | None = None,
) -> dict[str, Any]:
    """Compiles, runs, checks and times one kernel file on the current CUDA device.

    - `sizes` gives every symbolic dimension ("M": 4096, ...) and, optionally, scalar
      arguments by name.
    - `dtype`, when given, must equal the element type of every tensor argument (the
      compiled kernel's types are fixed; this only guards a command line's expectation).
    - Outputs (tensors only stored to) are filled with NaN before the launch; tensors that
      are both loaded and stored are initialised randomly and checked too.
    - The reference is the interpreter in float32 on the GPU over upcast inputs, the
      user's program on its own grid (`reference`).
    - `flops` defaults to the tile-level count of tile.dot work the interpreter saw (only
      with `check`).

    Returns a dict: kernel, sizes, grid, block, errors (relative error per stored tensor),
    max_error, nan (an output kept or produced NaN where the reference has a value),
    nan_outputs (their names), unchecked_outputs (outputs with values where the reference
    stored nothing: `unchecked`), tol, ok (no NaN, nothing unchecked and max_error <= tol),
    time_ms (median), timer, flops, tflops.

    With `trace_out`, the kernel must be an instrumented build (sidecar "trace"): the
    first launch's trace is decoded to Chrome trace JSON at that path (`tawac.runtime.trace`),
    and nothing is timed (the stamps cost time); the result says `trace` (the path) and
    `trace_stamps`.
    """
    import torch

    cubin, sidecar, kernel_op = compile_fn(path)
    specs = list(sidecar["args"])
    if dtype is not None:
        wrong = [s["name"] for s in specs if s["kind"] == "tensor" and s["dtype"] != dtype]
        if wrong:
            raise LaunchError(
                f"{path}: tensor arguments {', '.join(wrong)} are not {dtype} "
                "(the element type is fixed by the kernel's signature)"
            )
    from tawac.analysis.args import kernel_arg_uses

    loads, stores = kernel_arg_uses(kernel_op)
    args = make_args(sidecar, sizes, stores, loads, seed=seed)
    ref_args = [a.float().clone() if isinstance(a, torch.Tensor) else a for a in args]
    kernel = load_kernel(cubin, sidecar)
    result: dict[str, Any] = {
        "kernel": kernel.name,
        "sizes": dict(sizes),
        "grid": kernel.grid(*args),
        "block": kernel.block,
        "errors": {},
        "max_error": None,
        "nan": None,
        "nan_outputs": [],
        "unchecked_outputs": [],
        "tol": tol,
        "ok": None,
    }
    kernel(*args)
    torch.cuda.synchronize()
    if trace_out is not None:
        from tawac.runtime.trace import write_chrome_trace

        if kernel.trace is None:
            raise LaunchError(f"{path}: the kernel is not an instrumented build (--trace)")
        doc = write_chrome_trace(trace_out, kernel.last_trace, sidecar)
        result["trace"] = str(trace_out)
        result["trace_stamps"] = doc["otherData"]["stamps"]
    if check:
        stats = reference(kernel_op, ref_args)
        if flops is None and stats["dot_flops"]:
            flops = float(stats["dot_flops"])
        checked = check_outputs(args, ref_args, stores, specs)
        result["errors"] = checked.errors
        result["nan_outputs"] = checked.nan_outputs
        result["unchecked_outputs"] = checked.unchecked_outputs
        result["max_error"] = checked.max_error
        result["nan"] = bool(checked.nan_outputs)
        result["ok"] = checked.ok(tol)
    if trace_out is not None:
        result.update(time_ms=None, timer=None, flops=flops, tflops=None)
        return result
    time_ms, timer = bench_ms(lambda: kernel(*args), warmup_ms, rep_ms)
    result["time_ms"] = time_ms
    result["timer"] = timer
    result["flops"] = flops
    result["tflops"] = flops / (time_ms * 1e-3) / 1e12 if flops else None
    return result
