"""`tawac tune`: the fastest kernel parameters and pipeline options per problem size.

    tawac tune examples/gemm.mlir --size M=1024,N=1024,K=1024 \\
        --space BLOCK_N=64,128,256 --space stages=3,4

Three phases:

1. The space: each `--space NAME=V1,V2,...` is one axis, a pipeline knob (a row of
   `tawac.support.options.KNOBS`, `mma-depth` or `mma_depth`) or a kernel parameter (an upper-case
   name the kernel declares); the candidates are their cartesian product, first axis
   slowest.
2. Compiling: the default configuration (no parameter or option set beyond `-D` and
   `--schedule`, which apply to every candidate) and every candidate are compiled in
   worker processes (forkserver or spawn: never a fork of a process that may hold CUDA)
   through the compile cache, so a second run starts at once. A candidate that does not
   compile (a tile too large for shared memory, ...) is rejected with its diagnostic.
3. Timing, on the GPUs (every local one, `--devices N` fewer; one worker process per
   device, each size wholly on one: `tawac.runtime.devices.per_device`), per size:
   random inputs, a float32 reference from the tile interpreter (one per size: every
   candidate computes the same function), then each
   distinct kernel runs once (a NaN or a relative error above 2e-2 rejects it as a wrong
   result) and the correct ones are timed in 3 round-robin rounds (`--rounds`; the median of each;
   the machine's drift falls on every candidate alike). The fastest correct candidate
   that is faster than the default configuration in every round (`beats`; else the
   default) of each size is written to the tuning table (`<source>.tune.json`), keyed by the
   size's bucket (`tawac.schedule.tuning.bucket_of`) and whether the size is ragged
   (`tawac.schedule.tuning.ragged_of`: 1000^3 and 1024^3 share a bucket, each with its entry);
   the table's entries of other buckets are kept.

The parts that need no GPU (space, candidates, ranking, the table) are pure functions,
and compiling and timing are injected (`compile_fn`, `measure_fn`): the tests run them
on the CPU.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import multiprocessing
import os
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawac.runtime.devices import device_count, per_device
from tawac.runtime.runner import L2_MODES, parse_sizes, require_hopper
from tawac.schedule import tuning
from tawac.schedule.tuning import (
    TABLE_FORMAT,
    UNSTATED,
    bucket_of,
    load_table,
    ragged_of,
    source_sha256,
)
from tawac.support.diagnostics import CompileError
from tawac.support.files import write_atomic
from tawac.support.options import knob
from tawac.tools.tune_space import (
    TOLERANCE,
    Axis,
    Candidate,
    enumerate_candidates,
    parse_space,
)

# --------------------------------------------------------------------------- compiling


@dataclass
class Compiled:
    """A candidate's compilation: its cubin and sidecar, or why it was rejected."""

    candidate: Candidate
    cubin: bytes | None = None
    sidecar: dict | None = None
    params: dict[str, int] = field(default_factory=dict)  # all set: -D and the candidate's
    key: str | None = None  # the compile cache's key: equal keys, equal kernels
    hit: bool = False  # found in the cache
    error: str | None = None  # the one-line diagnostic of a rejected candidate

    @property
    def ok(self) -> bool:
        return self.error is None


def compile_candidate(
    source: str, params: dict[str, int], options: dict[str, Any], use_cache: bool = True
):
    """Compile one configuration through the driver's compile path (the default
    `compile_fn`): from the disk cache, or compiled and stored (`use_cache` False:
    neither)."""
    from tawac.driver import compile_cached

    return compile_cached(source, params=params or None, use_cache=use_cache, **options)


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def compile_job(
    compile_fn: Callable,
    source: str,
    candidate: Candidate,
    base_options: Mapping[str, Any],
    base_params: Mapping[str, int] | None = None,
) -> Compiled:
    """Compile one candidate (in a worker process), over the fixed `base_options` and
    `base_params`; a diagnostic rejects it."""
    params = {**(base_params or {}), **candidate.params}
    try:
        r = compile_fn(source, params, {**base_options, **candidate.options})
    except CompileError as e:
        return Compiled(candidate, error=_one_line(e))
    except Exception as e:  # a compiler bug in one candidate does not end the search
        if os.environ.get("TAWAC_DEBUG"):
            raise
        return Compiled(
            candidate, error=f"internal compiler error: {type(e).__name__}: {_one_line(e)}"
        )
    report = getattr(r, "ptxas_report", "") or ""
    spilled = re.search(r"(\d+) bytes spill stores", report)
    if spilled is not None and int(spilled.group(1)) > 0:
        # a spilling kernel is not a configuration to ship, however fast it times
        return Compiled(candidate, error=f"ptxas spills registers ({spilled.group(0)})")
    return Compiled(
        candidate,
        cubin=r.cubin,
        sidecar=dict(r.sidecar),
        params=params,
        key=getattr(r, "key", None),
        hit=bool(getattr(r, "hit", False)),
    )


def _pool_context():
    """Worker processes that start fresh: a fork of a process that initialised CUDA
    cannot use it (and the forkserver is cheaper than spawning each worker)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def compile_all(
    source: str,
    candidates: Sequence[Candidate],
    *,
    jobs: int | None = None,
    compile_fn: Callable | None = None,
    base_options: Mapping[str, Any] | None = None,
    base_params: Mapping[str, int] | None = None,
    advance: Callable[[], None] = lambda: None,
) -> list[Compiled]:
    """Compile the candidates on `jobs` worker processes (default: one per CPU; 1: in this
    process); results in the candidates' order. `compile_fn(source, params, options)`
    returns an object with `cubin`, `sidecar`, `key`, `hit` (tawac.driver's CachedKernel);
    it must be picklable (a module-level function) when `jobs` > 1."""
    compile_fn = compile_fn if compile_fn is not None else compile_candidate
    base = dict(base_options or {})
    fixed = dict(base_params or {})
    jobs = min(jobs or os.cpu_count() or 1, len(candidates))
    if jobs <= 1:
        out = []
        for c in candidates:
            out.append(compile_job(compile_fn, source, c, base, fixed))
            advance()
        return out
    results: list[Compiled | None] = [None] * len(candidates)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context()) as pool:
            futures = {
                pool.submit(compile_job, compile_fn, source, c, base, fixed): i
                for i, c in enumerate(candidates)
            }
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                advance()
    except BrokenProcessPool as e:
        raise CompileError(
            f"a compile worker died ({e}); out of memory? try fewer jobs (-j)"
        ) from None
    return [r for r in results if r is not None]


def check_declared(axes: Sequence[Axis], compiled: Sequence[Compiled]) -> None:
    """Every parameter axis names a parameter the kernel declares (the sidecar's
    "kernel_params" of any compiled candidate lists them all)."""
    names = [a.name for a in axes if a.kind == "param"]
    side = next((c.sidecar for c in compiled if c.ok), None)
    if not names or side is None:
        return
    declared = side.get("kernel_params") or {}
    unknown = [n for n in names if n not in declared]
    if unknown:
        raise CompileError(
            f"--space {', '.join(unknown)}: the kernel declares no such parameter "
            f"(it declares {', '.join(declared) or 'none'})"
        )


# --------------------------------------------------------------------------- timing


#: Round-robin rounds per size (`--rounds`): a candidate must beat the default in each.
ROUNDS = 3


@dataclass
class Measured:
    """A candidate at one size: its time, or why it was rejected."""

    candidate: Candidate
    time_ms: float | None = None
    tflops: float | None = None
    error: float | None = None  # relative error to the reference
    reject: str | None = None  # "compile: ...", "wrong result: ...", "launch failed: ..."
    note: str | None = None  # e.g. "same kernel as default"
    rounds: tuple[float, ...] = ()  # each round-robin round's time (ms), in round order

    @property
    def ok(self) -> bool:
        return self.reject is None and self.time_ms is not None


@dataclass
class Timings:
    """What `measure_fn` returns for one size: the device and one row per kernel."""

    device: str
    rows: list[Measured]


def require_gpu() -> None:
    """Timing needs torch with CUDA and a Hopper GPU."""
    require_hopper(
        "tawac tune", " to time candidates", " (--compile-only compiles the candidates without one)"
    )


def kernel_op(source: str, params: Mapping[str, int] | None):
    """The tile.kernel of `source` with `params` set (the reference interpreter's)."""
    from tawac.dialects import tile
    from tawac.driver import parse_source

    module = parse_source(source, params=dict(params) if params else None)
    kernels = [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]
    if len(kernels) != 1:
        raise CompileError(f"{source}: expected exactly one tile.kernel, found {len(kernels)}")
    return kernels[0]


def arg_access(sidecar: Mapping[str, Any]) -> tuple[set[int], set[int]]:
    """(indices of arguments the kernel reads, indices it writes), from the sidecar's
    "access" (the driver writes it for every kernel)."""
    specs = sidecar["args"]
    reads = {i for i, s in enumerate(specs) if s["access"] in ("read", "readwrite")}
    writes = {i for i, s in enumerate(specs) if s["access"] in ("write", "readwrite")}
    return reads, writes


def measure_size(
    source: str,
    sizes: Mapping[str, int],
    compiled: Sequence[Compiled],
    *,
    rep_ms: float = 100.0,
    tol: float = TOLERANCE,
    seed: int = 0,
    advance: Callable[[], None] = lambda: None,
    rounds: int = ROUNDS,
    l2: str = "dirty",
) -> Timings:
    """Run, check and time each compiled kernel at `sizes` on the current CUDA device.
    The correct kernels are timed `rounds` times round-robin, each round starting one
    kernel later, and keep the median: the machine's drift (clocks under power limits)
    falls on every candidate alike rather than on the last ones. `l2`: how the L2 is
    emptied before each timed call (`tawac.runtime.runner.timer`).

    The reference is the interpreter in float32 over the first kernel's (the default
    configuration's, when it compiled) tile program; every kernel starts from the same
    inputs (outputs NaN-filled), so a kernel that leaves an output unwritten fails."""
    import torch

    from tawac.runtime.arguments import LaunchError
    from tawac.runtime.launcher import load_kernel
    from tawac.runtime.runner import (
        check_outputs,
        make_args,
        reference,
        round_robin,
        timer,
    )

    ref = compiled[0]
    op = kernel_op(source, ref.params)
    reads, writes = arg_access(ref.sidecar)
    specs = ref.sidecar["args"]
    base = make_args(ref.sidecar, sizes, writes, reads, seed=seed)
    ref_args = [a.float().clone() if isinstance(a, torch.Tensor) else a for a in base]
    stats = reference(op, ref_args)
    flops = float(stats["dot_flops"]) or None

    rows: list[Measured] = []
    timed: list[tuple[int, Callable[[], None], float]] = []  # row index, call, error
    for c in compiled:
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in base]
        try:
            kernel = load_kernel(c.cubin, c.sidecar)
            kernel(*args)
            torch.cuda.synchronize()
        except LaunchError as e:
            rows.append(Measured(c.candidate, reject=f"launch failed: {_one_line(e)}"))
            advance()
            continue
        except RuntimeError as e:  # a fault: the CUDA context is lost for every candidate
            raise CompileError(
                f"{c.candidate.label()}: the kernel faulted at {_sizes_text(sizes)} "
                f"({_one_line(e)}); the CUDA context is lost: leave it out of the space"
            ) from None
        checked = check_outputs(args, ref_args, writes, specs)
        worst = checked.max_error
        failure = checked.failure(tol)
        reject = None if failure is None else f"wrong result: {failure}"
        if reject is not None:
            rows.append(Measured(c.candidate, error=worst, reject=reject))
            advance()
            continue
        timed.append((len(rows), lambda k=kernel, a=args: k(*a), worst))
        rows.append(Measured(c.candidate, error=worst))
    samples: list[list[float]] = [[] for _ in timed]
    order = round_robin(len(timed), rounds)
    time = timer(l2)
    for pos, j in enumerate(order):
        samples[j].append(time(timed[j][1], 25.0, rep_ms))
        if pos >= len(order) - len(timed):  # its last round
            advance()
    for (i, _, worst), times in zip(timed, samples, strict=True):
        time_ms = statistics.median(times)
        tflops = flops / (time_ms * 1e-3) / 1e12 if flops else None
        rows[i] = Measured(
            rows[i].candidate, time_ms=time_ms, tflops=tflops, error=worst, rounds=tuple(times)
        )
    return Timings(torch.cuda.get_device_name(), rows)


# --------------------------------------------------------------------------- ranking


@dataclass
class SizeResult:
    """One size: its rows ranked (fastest correct first, rejected last), the default
    configuration's row and the winner."""

    sizes: dict[str, int]
    rows: list[Measured]
    default: Measured | None
    winner: Measured | None
    device: str | None = None


def rank(rows: Sequence[Measured]) -> list[Measured]:
    """Correct rows by time (ties: the earlier candidate first), then the rejected ones in
    their order."""
    order = {id(r): i for i, r in enumerate(rows)}
    good = sorted((r for r in rows if r.ok), key=lambda r: (r.time_ms, order[id(r)]))
    return good + [r for r in rows if not r.ok]


def beats(row: Measured, default: Measured) -> bool:
    """Whether `row` is faster than the default configuration in every round-robin round
    (each round times both within moments of each other); by the medians where the
    rounds were not recorded."""
    if not row.rounds or len(row.rounds) != len(default.rounds):
        return row.time_ms < default.time_ms
    return all(a < b for a, b in zip(row.rounds, default.rounds, strict=True))


def winner(rows: Sequence[Measured]) -> Measured | None:
    """The fastest correct row that `beats` the default configuration, else the default
    (a candidate faster by the median in some rounds only is within the machine's noise:
    on the H100, prefill attention candidates within 2% swapped places between runs,
    docs/perf.md 2026-11-27); without a correct default, the fastest correct row. A
    rejected row (wrong result, ...) never wins."""
    good = [r for r in rank(rows) if r.ok]
    default = next((r for r in rows if r.candidate.is_default and r.ok), None)
    if default is None:
        return good[0] if good else None
    return next((r for r in good if r is default or beats(r, default)), default)


def speedup(row: Measured, default: Measured | None) -> float | None:
    """The default configuration's time over this row's."""
    if default is None or not default.ok or not row.ok:
        return None
    return default.time_ms / row.time_ms


def unique_kernels(compiled: Sequence[Compiled]) -> tuple[list[Compiled], dict[int, int]]:
    """The compiled candidates with distinct kernels (cache keys), and for each one that
    repeats an earlier kernel, its index -> the earlier one's index."""
    first: dict[str, int] = {}
    unique: list[Compiled] = []
    same: dict[int, int] = {}
    for i, c in enumerate(compiled):
        if not c.ok:
            continue
        if c.key and c.key in first:  # '' or None: a kernel the cache could not key
            same[i] = first[c.key]
            continue
        if c.key:
            first[c.key] = i
        unique.append(c)
    return unique, same


def size_result(
    sizes: Mapping[str, int],
    compiled: Sequence[Compiled],
    timings: Timings,
) -> SizeResult:
    """Rows for every candidate of `compiled` (default first) from the timings of its
    distinct kernels, ranked; the winner."""
    unique, same = unique_kernels(compiled)
    by_kernel = {id(c): m for c, m in zip(unique, timings.rows, strict=True)}
    rows: list[Measured] = []
    for i, c in enumerate(compiled):
        if not c.ok:
            rows.append(Measured(c.candidate, reject=f"compile: {c.error}"))
        elif i in same:
            twin = compiled[same[i]]
            m = by_kernel[id(twin)]
            rows.append(
                dataclasses.replace(
                    m, candidate=c.candidate, note=f"same kernel as {twin.candidate.label()}"
                )
            )
        else:
            rows.append(by_kernel[id(c)])
    default = next((r for r in rows if r.candidate.is_default), None)
    return SizeResult(dict(sizes), rank(rows), default, winner(rows), timings.device)


# --------------------------------------------------------------------------- the table


def table_entry(
    result: SizeResult,
    base_options: Mapping[str, Any],
    base_params: Mapping[str, int] | None = None,
    date: str | None = None,
    l2: str = "dirty",
) -> dict[str, Any]:
    """The table entry of a size's winner (with the fixed options and parameters); `l2`
    "clean" is recorded (`"l2": "clean"`: its time was measured with a clean L2)."""
    w = result.winner
    assert w is not None
    bucket = dict(bucket_of(result.sizes))
    exact = {k: int(v) for k, v in result.sizes.items() if k in bucket}
    return {
        "bucket": bucket,
        "ragged": ragged_of(result.sizes),
        **({"sizes": exact} if exact != bucket else {}),
        "params": {**(base_params or {}), **w.candidate.params},
        "options": {
            **{k: knob(k).default for k in UNSTATED},  # type: ignore[union-attr]
            **base_options,
            **w.candidate.options,
        },
        "time_ms": w.time_ms,
        **({"l2": l2} if l2 != "dirty" else {}),
        "tflops": w.tflops,
        "device": result.device,
        "date": date if date is not None else datetime.date.today().isoformat(),
    }


def entry_key(entry: Mapping[str, Any]) -> tuple:
    """An entry's place in the table: its bucket, whether it is for ragged sizes, the
    sizes it was tuned at where they are not the bucket's own, and (a Triton function's
    table, `tawac.tools.tune_triton`) the constexprs it was tuned with."""
    bucket = entry.get("bucket", {})
    exact = entry.get("sizes") or {}
    consts = entry.get("constexprs") or {}
    return (
        tuple(sorted((str(k), v) for k, v in dict(bucket).items())),
        entry.get("ragged"),
        tuple(sorted((str(k), v) for k, v in dict(exact).items())),
        tuple(sorted((str(k), v) for k, v in dict(consts).items())),
    )


def merge_table(
    old: Mapping[str, Any] | None,
    entries: Sequence[Mapping[str, Any]],
    *,
    kernel: str,
    sha256: str,
    args: list,
) -> tuple[dict[str, Any], bool]:
    """The table to write: `entries` replace the old table's entries of their buckets,
    the old table's other entries are kept, when it was tuned for this source (same
    sha256); else a new table. Returns (table, whether the old table was stale). Of
    several new entries of one bucket the last counts."""
    stale = old is not None and (
        old.get("format") != TABLE_FORMAT or old.get("source_sha256") != sha256
    )
    new = {entry_key(e): dict(e) for e in entries}
    merged: list[dict[str, Any]] = []
    if old is not None and not stale:
        for e in old.get("entries", []):
            k = entry_key(e)
            merged.append(new.pop(k) if k in new else dict(e))
    merged.extend(new.values())
    table = {
        "format": TABLE_FORMAT,
        "kernel": kernel,
        "source_sha256": sha256,
        "args": args,
        "entries": merged,
    }
    return table, stale


def read_table(path: Path) -> dict[str, Any] | None:
    """The existing table at `path` (validated by tawac.schedule.tuning), None when there is none.
    An unreadable one is a CompileError naming it."""
    if not path.exists():
        return None
    try:
        return dict(load_table(path))
    except CompileError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompileError(
            f"{path}: not a tuning table ({_one_line(e)}); remove it or give --table"
        ) from None


def write_table(path: Path, table: Mapping[str, Any]) -> None:
    """Write through a temporary file in the same folder, replaced atomically."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CompileError(f"table folder {folder} does not exist")
    write_atomic(path, json.dumps(table, indent=2) + "\n")


# --------------------------------------------------------------------------- the command


@dataclass
class TuneResult:
    """Everything one `tawac tune` found."""

    candidates: list[Candidate]
    compiled: list[Compiled]  # the default configuration first, then the candidates
    sizes: list[SizeResult] = field(default_factory=list)
    table_path: Path | None = None
    table: dict | None = None
    stale: bool = False


def _progress(console):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=console is None or not console.is_terminal,
    )


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_compiled(compiled: Sequence[Compiled], out) -> None:
    """The compile phase's table: each candidate compiled (from the cache?) or rejected."""
    from rich.table import Table

    t = Table(title="compiled candidates", title_justify="left")
    for col in ("candidate", "result", "threads", "smem KiB"):
        t.add_column(col, justify="right" if col in ("threads", "smem KiB") else "left")
    for c in compiled:
        if not c.ok:
            t.add_row(c.candidate.label(), f"rejected: {c.error}", "-", "-")
            continue
        side = c.sidecar or {}
        block = side.get("block") or [None]
        smem = side.get("dynamic_smem")
        t.add_row(
            c.candidate.label(),
            "compiled (cached)" if c.hit else "compiled",
            _fmt(block[0], "d"),
            _fmt(smem / 1024 if smem is not None else None, ".1f"),
        )
    out.print(t)


def print_size(result: SizeResult, out) -> None:
    """One size's table: candidates ranked, time, TFLOP/s, speedup over the default."""
    from rich.table import Table

    title = _sizes_text(result.sizes)
    if result.device:
        title += f" on {result.device}"
    t = Table(title=title, title_justify="left")
    t.add_column("#", justify="right")
    t.add_column("candidate")
    t.add_column("time ms", justify="right")
    t.add_column("TFLOP/s", justify="right")
    t.add_column("vs default", justify="right")
    t.add_column("status")
    for i, r in enumerate(result.rows, 1):
        s = speedup(r, result.default)
        if r is result.winner:
            status = "best"
        elif s is not None and s > 1.0 and not beats(r, result.default):
            status = "ok (not faster than the default in every round)"
        elif r.ok:
            status = "ok"
        else:
            status = r.reject or "rejected"
        if r.note:
            status += f" ({r.note})"
        t.add_row(
            str(i) if r.ok else "-",
            r.candidate.label(),
            _fmt(r.time_ms, ".4f"),
            _fmt(r.tflops, ".1f"),
            "-" if s is None else f"{s:.2f}x",
            status,
        )
    out.print(t)


def run_tune(
    source: str,
    sizes: Sequence[Mapping[str, int]],
    axes: Sequence[Axis],
    *,
    jobs: int | None = None,
    table_path: str | Path | None = None,
    rep_ms: float = 100.0,
    compile_only: bool = False,
    base_options: Mapping[str, Any] | None = None,
    base_params: Mapping[str, int] | None = None,
    compile_fn: Callable | None = None,
    measure_fn: Callable[..., Timings] | None = None,
    devices: int | None = None,
    l2: str = "dirty",
    rounds: int = ROUNDS,
    out=None,
    err=None,
) -> TuneResult:
    """Tune `source` over the space `axes` at each of `sizes` (see the module's doc);
    prints to the rich consoles `out` (tables) and `err` (progress, notes). The sizes are
    timed on `devices` GPUs at once (default: every local one with the real
    `measure_size`, one otherwise), one worker process per device, each size wholly on
    one device. Raises a CompileError when no candidate compiles, or after writing the
    table, when a size has no correct candidate."""
    from rich.console import Console

    from tawac.support.files import read_source

    out = out if out is not None else Console(highlight=False, emoji=False)
    err = err if err is not None else Console(stderr=True, highlight=False, emoji=False)
    base = dict(base_options or {})
    fixed = dict(base_params or {})
    both = [knob(a.name) for a in axes if a.kind == "option" and a.name in base]
    if both:
        flag = both[0].option
        raise CompileError(f"--{flag} and --space {flag}=...: give one of them")
    both = [a.name for a in axes if a.kind == "param" and a.name in fixed]
    if both:
        raise CompileError(f"-D {both[0]} and --space {both[0]}=...: give one of them")
    text = read_source(source)
    candidates = enumerate_candidates(axes)
    todo = [Candidate()] + [c for c in candidates if not c.is_default]
    result = TuneResult(candidates, [])

    workers = min(jobs or os.cpu_count() or 1, len(todo))
    err.print(f"compiling {len(todo)} configurations on {workers} worker(s)", markup=False)
    with _progress(err) as progress:
        task = progress.add_task("compile", total=len(todo))
        result.compiled = compile_all(
            source,
            todo,
            jobs=jobs,
            compile_fn=compile_fn,
            base_options=base,
            base_params=fixed,
            advance=lambda: progress.advance(task),
        )
    check_declared(axes, result.compiled)
    ok = [c for c in result.compiled if c.ok]
    rejected = len(result.compiled) - len(ok)
    cached = sum(c.hit for c in ok)
    err.print(f"compiled {len(ok)} ({cached} from the cache), rejected {rejected}", markup=False)
    if not ok:
        raise CompileError(f"no candidate compiles; the first error: {result.compiled[0].error}")
    if compile_only:
        print_compiled(result.compiled, out)
        return result
    if not sizes:
        raise CompileError("tawac tune needs at least one --size (or --compile-only)")

    # The table is read (and its folder checked) before the timing, which takes minutes.
    path = Path(table_path) if table_path is not None else tuning.table_path(source)
    if not (path.parent if str(path.parent) else Path(".")).is_dir():
        raise CompileError(f"table folder {path.parent} does not exist")
    old = read_table(path)

    if l2 not in L2_MODES:
        raise CompileError(f"--l2 {l2!r}: one of {', '.join(L2_MODES)}")
    measure_fn = measure_fn if measure_fn is not None else measure_size
    real = measure_fn is measure_size
    if rounds < 1:
        raise CompileError(f"--rounds {rounds}: at least 1")
    if l2 != "dirty":
        measure_fn = functools.partial(measure_fn, l2=l2)
    if rounds != ROUNDS:
        measure_fn = functools.partial(measure_fn, rounds=rounds)
    unique, _ = unique_kernels(result.compiled)
    if not result.compiled[0].ok:
        err.print(
            "the default configuration does not compile; the reference is the first "
            f"candidate's ({unique[0].candidate.label()}), no speedups",
            markup=False,
        )
    if devices is None:
        devices = device_count() if real else 1
    devices = max(1, min(devices, len(sizes)))
    on = f" on {devices} GPUs" if devices > 1 else ""
    err.print(f"timing {len(unique)} kernel(s) at {len(sizes)} size(s){on}", markup=False)
    with _progress(err) as progress:
        task = progress.add_task("time", total=len(sizes) * len(unique))
        if devices > 1:
            every = time_on_devices(
                measure_fn, source, sizes, unique, rep_ms, devices, progress, task
            )
        else:
            every = [
                measure_fn(
                    source, dims, unique, rep_ms=rep_ms, advance=lambda: progress.advance(task)
                )
                for dims in sizes
            ]
        for dims, timings in zip(sizes, every, strict=True):
            result.sizes.append(size_result(dims, result.compiled, timings))
    for r in result.sizes:
        print_size(r, out)

    won = [r for r in result.sizes if r.winner is not None]
    if won:
        entries = [table_entry(r, base, fixed, l2=l2) for r in won]
        _note_shared_buckets(won, entries, err)
        table, stale = merge_table(
            old,
            entries,
            kernel=unique[0].sidecar["kernel"],
            sha256=source_sha256(text),
            args=list(unique[0].sidecar["args"]),
        )
        if stale:
            err.print(
                f"note: {path} was tuned for another version of {source}; starting a new table",
                markup=False,
            )
        write_table(path, table)
        result.table_path, result.table, result.stale = path, table, stale
        tuned = len({entry_key(e) for e in entries})
        kept = len(table["entries"]) - tuned
        out.print(f"table: {path} ({tuned} bucket(s) tuned, {kept} kept)", markup=False)
    lost = [r for r in result.sizes if r.winner is None]
    if lost:
        names = "; ".join(_sizes_text(r.sizes) for r in lost)
        raise CompileError(f"no candidate ran correctly at {names}")
    return result


def _measure_job(dims: Mapping[str, int], measure_fn, source: str, unique, rep_ms: float):
    return measure_fn(source, dims, unique, rep_ms=rep_ms, advance=_nothing)


def _nothing() -> None:
    return None


def time_on_devices(
    measure_fn, source: str, sizes, unique, rep_ms: float, devices: int, progress, task
) -> list[Timings]:
    """Each size's timings by `measure_fn` (a module-level function) in a worker process
    per GPU (`tawac.runtime.devices.per_device`), in the sizes' order; the first size
    that failed raises its error."""
    fn = functools.partial(
        _measure_job, measure_fn=measure_fn, source=source, unique=list(unique), rep_ms=rep_ms
    )
    outcomes = per_device(fn, list(sizes), devices, lambda o: progress.advance(task, len(unique)))
    for o in outcomes:
        if o.error is not None:
            kind, _, text = o.error.partition(": ")
            raise CompileError(text if kind == "CompileError" else o.error)
    return [o.value for o in outcomes]


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def _note_shared_buckets(won: Sequence[SizeResult], entries: Sequence[dict], err) -> None:
    """Say when two tuned sizes fall in one bucket (the table keeps the later one)."""
    seen: dict[tuple, SizeResult] = {}
    for r, e in zip(won, entries, strict=True):
        k = entry_key(e)
        if k in seen:
            err.print(
                f"note: {_sizes_text(seen[k].sizes)} and {_sizes_text(r.sizes)} share a "
                "bucket; the table keeps the later one's winner",
                markup=False,
            )
        seen[k] = r


def tune_command(
    source: str,
    sizes: Sequence[str],
    space: Sequence[str],
    *,
    jobs: int | None,
    table: str | None,
    rep_ms: float,
    compile_only: bool,
    schedule: str | None,
    defines: Sequence[str] = (),
    use_cache: bool = True,
    devices: int | None = None,
    l2: str = "dirty",
    rounds: int = ROUNDS,
) -> TuneResult:
    """`tawac tune` from its command-line values (tawac/tools/cli.py); `use_cache` False
    (`--no-cache`) compiles every candidate afresh and stores none; `devices`: GPUs timing
    at once (None: every local one)."""
    from rich.console import Console

    from tawac.support.params import parse_defines

    fixed = parse_defines(defines)
    axes = parse_space(space)
    dims = [parse_sizes(s) for s in sizes]
    if not compile_only:
        if not dims:
            raise CompileError("tawac tune needs at least one --size (or --compile-only)")
        require_gpu()
    out = Console(highlight=False, emoji=False)
    if not out.is_terminal:
        out = Console(highlight=False, emoji=False, width=120)
    err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)
    return run_tune(
        source,
        dims,
        axes,
        jobs=jobs,
        table_path=table,
        rep_ms=rep_ms,
        compile_only=compile_only,
        base_options={"schedule": schedule} if schedule is not None else {},
        base_params=fixed,
        compile_fn=None if use_cache else functools.partial(compile_candidate, use_cache=False),
        devices=devices,
        l2=l2,
        rounds=rounds,
        out=out,
        err=err,
    )
