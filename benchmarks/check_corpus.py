"""The correctness sweep: every program of corpus/corpus.json under every configuration of
`CONFIGS` (each planner, then each knob that changes generated code, one at a time against
the default planner), compiled in a process pool and run on the GPU at the program's
ragged `check_sizes` against the float32 reference interpreter.

Per program the inputs are made once (`tawac.runtime.runner.make_args`, from the original
program's signature, with the corpus entry's `indices`), the original program is
interpreted once on the GPU in float32 as a launch of its own grid
(`tawac.runtime.interpret.interpret_launch`: the grid its stores imply, not the compiled
kernel's, which `group-heads` shrinks), and every compiled kernel runs on fresh copies of
the same inputs (a decomposed kernel's workspace allocated by the launcher); kernels
whose cubin and sidecar are byte-identical to an earlier configuration's run once. A
cell is the largest relative error of any output (`relative_error`), `-` where the
compile was refused with a located error (the configuration does not apply), `!` marks
a failure: an error above `--tol` (2e-2, `tawac run`'s), NaN where the reference has a
value, an unlocated refusal or an internal compile error, a launch error.

    python3 benchmarks/check_corpus.py                                # everything
    python3 benchmarks/check_corpus.py --only gemm_bf16_128x256 --configs auto,sk2
    python3 benchmarks/check_corpus.py --configs "auto,stages=2:pingpong=1"
    python3 benchmarks/check_corpus.py --compile-only --jobs 2        # no GPU needed
    python3 benchmarks/check_corpus.py --json benchmarks/results/check-corpus-DATE-DEV.json

Exit status 1 where any cell failed.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "corpus" / "corpus.json"
RESULTS = ROOT / "benchmarks" / "results"
#: `tawac run`'s tolerance (`run_kernel_file`'s default).
TOL = 2e-2
#: Seconds one compile may take (parse, passes, ptxas).
COMPILE_LIMIT = 180.0
#: The planner of every knob's configuration (pinned: $TAWAC_SCHEDULE does not move it).
BASE = {"schedule": "auto"}

#: The configurations, by short name: each planner, then one knob at a time (on `BASE`)
#: for every knob of `tawac.support.options.KNOBS` that changes the generated code.
CONFIGS: dict[str, dict[str, Any]] = {
    "auto": {"schedule": "auto"},
    "heuristic": {"schedule": "heuristic"},
    "solver": {"schedule": "solver"},
    "st2": {"stages": 2},
    "st3": {"stages": 3},
    "st4": {"stages": 4},
    "mma1": {"mma_depth": 1},
    "cwg1": {"consumer_warp_groups": 1},
    "cwg2": {"consumer_warp_groups": 2},
    "cwg3": {"consumer_warp_groups": 3},
    "nopers": {"persistent": False},
    "c2x1": {"cluster": "2x1"},
    "c1x2": {"cluster": "1x2"},
    "c2x1np": {"cluster": "2x1", "persistent": False},
    "c1x2np": {"cluster": "1x2", "persistent": False},
    "notma": {"tma_store": False},
    "pingpong": {"pingpong": True},
    "nocoarse": {"coarse_pipeline": False},
    "overlap": {"overlap_epilogue": True},
    "nochain": {"chain_loops": False},
    "skiprs": {"skip_rescale": True},
    "fma1": {"exp2_fma": 1},
    "fma2": {"exp2_fma": 2},
    "fma3": {"exp2_fma": 3},
    "gm1": {"group_m": 1},
    "gm4": {"group_m": 4},
    "nopref": {"tile_prefetch": False},
    "cps2": {"ctas_per_sm": 2},
    "noreuse": {"reuse_slots": False},
    "nol2": {"l2_hints": False},
    "nohold": {"hold_slots": False},
    "spread": {"spread_rows": True},
    "noreread": {"reread_slots": False},
    "nosink": {"sink_reductions": False},
    "sk2": {"split_k": 2},
    "sk3": {"split_k": 3},
    "strk2": {"stream_k": 2},
    "swapab": {"swap_ab": True},
    "widen1": {"widen": 1},
    "widen2": {"widen": 2},
    "nogh": {"group_heads": False},
    "noguard": {"guard_masks": False},
    "trace": {"trace": True},
}

#: Knobs no configuration needs to vary: `trace_every` only thins an instrumented build's
#: stamps (`trace` covers the instrumented code).
UNSWEPT = frozenset({"trace_every"})


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["programs"]


def parse_configs(text: str) -> dict[str, dict[str, Any]]:
    """`--configs`: comma-separated names of `CONFIGS` (`all`: every one), or ad-hoc
    configurations of knobs written `name=value`, one per ':' (`stages=2:pingpong=1`,
    names with underscores or hyphens); ValueError on an unknown name or a bad value."""
    from tawac.support.options import knob

    out: dict[str, dict[str, Any]] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item == "all":
            out.update(CONFIGS)
            continue
        if item in CONFIGS:
            out[item] = CONFIGS[item]
            continue
        if "=" not in item:
            raise ValueError(f"unknown configuration '{item}' (one of {', '.join(CONFIGS)})")
        fields: dict[str, Any] = {}
        for part in item.split(":"):
            name, _, value = part.partition("=")
            k = knob(name)
            if k is None:
                raise ValueError(f"'{item}': no knob '{name}'")
            try:
                fields[k.name] = k.parse(value)
            except ValueError as e:
                raise ValueError(f"'{item}': {k.name}: {e}") from None
        out[item] = fields
    if not out:
        raise ValueError("no configuration given")
    return out


def options_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The `PipelineOptions` fields a configuration compiles with (on `BASE`)."""
    return {**BASE, **config}


# ---- compiling (in worker processes: no CUDA, no xDSL objects cross the pool)


def compile_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """One compile, in a pool worker: `job` has "key" (returned as is), "source" (a path)
    or "text" with "filename", "params" and "options" (`PipelineOptions` fields). Returns
    {"key", "status": "ok" | "refused" | "error", "cubin", "sidecar", "seconds",
    "message", "located"}: "refused" is a `CompileError` (`located`: it names a
    `file:line:col`), "error" any other exception (its traceback's last lines)."""
    from tawac.compiler import compile_file, compile_source
    from tawac.support.diagnostics import CompileError

    t0 = time.perf_counter()
    out: dict[str, Any] = {"key": job["key"], "cubin": b"", "sidecar": None, "message": ""}
    out["located"] = False
    try:
        options = dict(job["options"])
        params = job.get("params") or None
        if job.get("text") is not None:
            res = compile_source(
                job["text"], job.get("filename", "<variant>"), params=params,
                time_limit=COMPILE_LIMIT, cubin=True, **options,
            )  # fmt: skip
        else:
            res = compile_file(
                job["source"], params=params, time_limit=COMPILE_LIMIT, cubin=True, **options
            )
        out.update(status="ok", cubin=res.cubin or b"", sidecar=res.sidecar)
    except CompileError as e:
        out.update(status="refused", message=str(e), located=e.location is not None)
    except Exception as e:  # noqa: BLE001 (an internal error is a result of the sweep)
        tb = traceback.format_exception(e)
        out.update(status="error", message="".join(tb[-3:]).strip())
    out["seconds"] = time.perf_counter() - t0
    return out


def pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of `jobs` fresh interpreters (spawn: the parent may hold a CUDA context,
    which a forked child must not inherit)."""
    import multiprocessing

    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))


def compile_many(jobs: Iterable[Mapping[str, Any]], workers: int) -> Iterable[dict[str, Any]]:
    """`compile_job` of each job in a pool of `workers` processes, yielded as they finish
    (in this process, one after another, with one worker)."""
    jobs = list(jobs)
    if workers <= 1:
        for job in jobs:
            yield compile_job(job)
        return
    with pool(workers) as ex:
        futures = [ex.submit(compile_job, job) for job in jobs]
        for fut in as_completed(futures):
            yield fut.result()


# ---- running (in this process, on the GPU)


def signature_of(kernel) -> list[dict[str, Any]]:
    """The caller's arguments of the original kernel op, as a sidecar lists them."""
    from tawac.backend_ptx.abi import arg_specs

    return arg_specs(kernel)


def same_signature(sidecar: Mapping[str, Any], specs: list[dict[str, Any]]) -> str | None:
    """Where a compiled kernel's arguments differ from the original's (name, kind, type),
    in words; None where they agree."""
    got = [(s["name"], s["kind"], s.get("dtype")) for s in sidecar["args"]]
    want = [(s["name"], s["kind"], s.get("dtype")) for s in specs]
    return None if got == want else f"arguments {got} are not the original's {want}"


class Reference:
    """A program's inputs at `sizes` (on the GPU, `make_args` from the original kernel's
    signature) and the float32 interpreter's outputs of the original kernel on them,
    launched on its own grid."""

    def __init__(
        self,
        kernel,
        sizes: Mapping[str, Any],
        *,
        seed: int = 0,
        indices: Mapping[str, str] | None = None,
        device: str = "cuda",
    ):
        import torch

        from tawac.analysis.args import kernel_arg_uses
        from tawac.runtime.interpret import interpret_launch
        from tawac.runtime.runner import make_args

        self.specs = signature_of(kernel)
        loads, stores = kernel_arg_uses(kernel)
        self.stores = sorted(stores)
        self.args = make_args(
            {"args": self.specs}, sizes, stores, loads, seed=seed, indices=indices, device=device
        )
        # float32 copies of the floating-point tensors (i32 indices stay integers)
        self.ref = [
            (a.float() if a.is_floating_point() else a).clone()
            if isinstance(a, torch.Tensor)
            else a
            for a in self.args
        ]
        interpret_launch(kernel, self.ref)
        if device == "cuda":
            torch.cuda.synchronize()

    def fresh_args(self) -> list:
        """Copies of the inputs (outputs NaN again; a read-write tensor as it was)."""
        import torch

        return [a.clone() if isinstance(a, torch.Tensor) else a for a in self.args]

    def check(self, kernel_args: list, tol: float = TOL) -> dict[str, Any]:
        """The outputs in `kernel_args` against the reference: {"errors" (relative error
        per stored tensor), "max_error", "nan_outputs", "ok"}."""

        from tawac.runtime.runner import check_outputs

        checked = check_outputs(kernel_args, self.ref, set(self.stores), self.specs)
        errors, nan_outputs, worst = checked.errors, checked.nan_outputs, checked.max_error
        ok = checked.ok(tol)
        return {
            "errors": errors,
            "max_error": worst,
            "nan_outputs": nan_outputs,
            "unchecked_outputs": checked.unchecked_outputs,
            "ok": ok,
        }

    def run(self, cubin: bytes, sidecar: Mapping[str, Any], tol: float = TOL) -> dict[str, Any]:
        """Launches the kernel once on fresh copies of the inputs and checks it."""
        import torch

        from tawac.runtime import load_kernel
        from tawac.runtime.arguments import LaunchError, check_shapes

        wrong = same_signature(sidecar, self.specs)
        if wrong is not None:
            return {"errors": {}, "max_error": math.nan, "nan_outputs": [], "ok": False,
                    "message": wrong}  # fmt: skip
        args = self.fresh_args()
        shapes = {
            spec["name"]: tuple(a.shape)
            for spec, a in zip(self.specs, args, strict=True)
            if isinstance(a, torch.Tensor)
        }
        try:  # the launch checks a pass stated (grouped heads: H a multiple of G)
            check_shapes(sidecar.get("checks", []), shapes, sidecar["args"])
        except LaunchError as e:
            return {"errors": {}, "max_error": math.nan, "nan_outputs": [], "ok": False,
                    "refused": True, "message": f"refused at launch: {e}"}  # fmt: skip
        kernel = load_kernel(cubin, sidecar)
        kernel(*args)
        torch.cuda.synchronize()
        return self.check(args, tol)


def digest(res: Mapping[str, Any]) -> str:
    side = json.dumps(res["sidecar"], sort_keys=True).encode()
    return hashlib.sha256(res["cubin"] + b"\0" + side).hexdigest()


class Sweep:
    """The sweep's state: per program, per configuration, its cell."""

    def __init__(self, programs, configs, *, run: bool, tol: float, seed: int):
        self.programs = {p["name"]: p for p in programs}
        self.configs = configs
        self.run = run
        self.tol = tol
        self.seed = seed
        self.cells: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in self.programs}
        self.compiled: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in self.programs}
        self.lost: str | None = None  # a launch error that left the CUDA context unusable

    def jobs(self) -> list[dict[str, Any]]:
        out = []
        for name, p in self.programs.items():
            for cfg, fields in self.configs.items():
                out.append({
                    "key": (name, cfg),
                    "source": str(ROOT / p["source"]),
                    "params": p.get("defines") or None,
                    "options": options_of(fields),
                })  # fmt: skip
        return out

    def add(self, res: dict[str, Any]) -> str | None:
        """Records a compile; the program's name once all its configurations compiled."""
        name, cfg = res["key"]
        self.compiled[name][cfg] = res
        cell: dict[str, Any] = {"status": res["status"], "compile_s": round(res["seconds"], 3)}
        if res["status"] == "refused":
            cell["message"] = res["message"]
            if not res["located"]:
                cell["status"] = "error"
                cell["message"] = "refused without a location: " + res["message"]
        elif res["status"] == "error":
            cell["message"] = res["message"]
        else:
            cell["status"] = "compiled"
        self.cells[name][cfg] = cell
        return name if len(self.compiled[name]) == len(self.configs) else None

    def check_program(self, name: str) -> None:
        """Runs the program's compiled kernels on the GPU (each distinct one once)."""
        from tawac.driver import kernel_op

        p = self.programs[name]
        results = self.compiled[name]
        if not self.run or self.lost is not None:
            if self.lost is not None:
                for cell in self.cells[name].values():
                    if cell["status"] == "compiled":
                        cell.update(status="error", message=f"not run: {self.lost}")
            self._drop(name)
            return
        try:
            op = kernel_op(ROOT / p["source"], params=p.get("defines") or None)
            ref = Reference(op, p["check_sizes"], seed=self.seed, indices=p.get("indices"))
        except Exception as e:  # noqa: BLE001
            msg = f"reference: {type(e).__name__}: {e}"
            for cell in self.cells[name].values():
                if cell["status"] == "compiled":
                    cell.update(status="error", message=msg)
            self._drop(name)
            return
        seen: dict[str, str] = {}
        for cfg in self.configs:
            res, cell = results[cfg], self.cells[name][cfg]
            if res["status"] != "ok":
                continue
            key = digest(res)
            if key in seen:
                cell.update({k: v for k, v in self.cells[name][seen[key]].items()
                             if k not in ("compile_s", "same_as")}, same_as=seen[key])  # fmt: skip
                continue
            seen[key] = cfg
            try:
                got = ref.run(res["cubin"], res["sidecar"], self.tol)
            except Exception as e:  # noqa: BLE001 (a launch error is a result too)
                cell.update(status="error", message=f"launch: {type(e).__name__}: {e}")
                if not _context_alive():
                    self.lost = f"the CUDA context was lost at {name} [{cfg}]"
                    break
                continue
            if got.get("refused"):  # not applicable at these sizes: no result, no failure
                cell.update(status="refused", message=got["message"])
                continue
            cell.update(
                status="ok" if got["ok"] else "failed",
                max_error=got["max_error"],
                errors=got["errors"],
                nan_outputs=got["nan_outputs"],
            )
            if "message" in got:
                cell["message"] = got["message"]
        if self.lost is not None:
            for cell in self.cells[name].values():
                if cell["status"] == "compiled":
                    cell.update(status="error", message=f"not run: {self.lost}")
        del ref
        self._drop(name)

    def _drop(self, name: str) -> None:
        for res in self.compiled[name].values():
            res["cubin"] = b""


def _context_alive() -> bool:
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001
        return False


# ---- the report


def cell_text(cell: Mapping[str, Any]) -> str:
    status = cell["status"]
    if status == "refused":
        return "-L" if cell.get("message", "").startswith("refused at launch") else "-"
    if status == "compiled":
        return "c"
    if status == "error":
        return "ERR!"
    err = cell.get("max_error")
    text = "nan" if err is None or math.isnan(err) else f"{err:.1e}"
    if cell.get("nan_outputs"):
        text += "N"
    return text + ("!" if status == "failed" else "")


def table(sweep: Sweep) -> str:
    names = list(sweep.programs)
    cfgs = list(sweep.configs)
    width = max(len(n) for n in names) + 1
    cols = [max(len(c), 7) for c in cfgs]
    lines = [" " * width + " ".join(c.rjust(w) for c, w in zip(cfgs, cols, strict=True))]
    for n in names:
        row = [cell_text(sweep.cells[n][c]).rjust(w) for c, w in zip(cfgs, cols, strict=True)]
        lines.append(n.ljust(width) + " ".join(row))
    return "\n".join(lines)


def summary(sweep: Sweep) -> dict[str, Any]:
    cells = [(n, c, cell) for n, row in sweep.cells.items() for c, cell in row.items()]
    checked = [x for x in cells if x[2]["status"] in ("ok", "failed")]
    worst = max(
        checked,
        key=lambda x: math.inf if math.isnan(x[2]["max_error"]) else x[2]["max_error"],
        default=None,
    )
    return {
        "cells": len(cells),
        "compiled": sum(r["status"] == "ok" for v in sweep.compiled.values() for r in v.values()),
        "checked": len(checked),
        "distinct": sum("same_as" not in x[2] for x in checked),
        "refused": sum(x[2]["status"] == "refused" for x in cells),
        "failed": sum(x[2]["status"] in ("failed", "error") for x in cells),
        "worst": None if worst is None else {
            "program": worst[0], "config": worst[1], "max_error": worst[2]["max_error"]
        },
    }  # fmt: skip


def versions() -> dict[str, Any]:
    out: dict[str, Any] = {"date": datetime.datetime.now().isoformat(timespec="seconds")}
    try:
        import torch

        out["torch"] = torch.__version__
        out["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        out["torch"], out["device"] = None, None
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = None
    from tawac.support.cache import tawac_version

    out["tawac"] = tawac_version()
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        out["commit"] = rev.stdout.strip() or None
    except OSError:
        out["commit"] = None
    return out


def compile_stats(sweep: Sweep, wall: float, workers: int) -> dict[str, Any]:
    secs = [r["seconds"] for row in sweep.compiled.values() for r in row.values()]
    ok = [r["seconds"] for row in sweep.compiled.values() for r in row.values()
          if r["status"] == "ok"]  # fmt: skip
    slow = max(
        ((r["seconds"], n, c) for n, row in sweep.compiled.items() for c, r in row.items()),
        default=(0.0, "", ""),
    )
    return {
        "kernels": len(secs),
        "wall_s": round(wall, 1),
        "workers": workers,
        "cpu_s": round(sum(secs), 1),
        "mean_s": round(statistics.fmean(secs), 3) if secs else None,
        "mean_compiled_s": round(statistics.fmean(ok), 3) if ok else None,
        "slowest": {"seconds": round(slow[0], 2), "program": slow[1], "config": slow[2]},
    }


def json_path(text: str) -> Path:
    """`--json`: a bare file name goes to benchmarks/results/."""
    path = Path(text)
    return RESULTS / path if path.parent == Path(".") else path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="the manifest (corpus/corpus.json)")
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--tags", default="", help="comma-separated tags (any of them)")
    ap.add_argument(
        "--configs",
        default="all",
        help="comma-separated configuration names (default: all: "
        + ", ".join(CONFIGS)
        + "), or knob=value:knob=value",
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile processes")
    ap.add_argument("--compile-only", action="store_true", help="compile everything, run nothing")
    ap.add_argument("--tol", type=float, default=TOL)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write every row here (a bare name: "
                    "benchmarks/results/NAME)")  # fmt: skip
    ap.add_argument("--list", action="store_true", help="print the configurations and exit")
    args = ap.parse_args(argv)

    try:
        configs = parse_configs(args.configs)
    except ValueError as e:
        raise SystemExit(f"check_corpus: {e}") from None
    if args.list:
        for name, fields in configs.items():
            print(f"{name:10} {options_of(fields)}")
        return 0
    programs = load_corpus(Path(args.corpus))
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = set(wanted) - {p["name"] for p in programs}
        if unknown:
            raise SystemExit(f"check_corpus: no program {', '.join(sorted(unknown))}")
        programs = [p for p in programs if p["name"] in wanted]
    if args.tags:
        tags = {t.strip() for t in args.tags.split(",") if t.strip()}
        programs = [p for p in programs if tags & set(p.get("tags", []))]
    if not programs:
        raise SystemExit("check_corpus: no program selected")
    run = not args.compile_only
    if run:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("check_corpus: no CUDA device (--compile-only compiles only)")
        torch.cuda.init()

    sweep = Sweep(programs, configs, run=run, tol=args.tol, seed=args.seed)
    jobs = sweep.jobs()
    workers = max(1, min(args.jobs, len(jobs)))
    print(f"{len(programs)} programs x {len(configs)} configurations = {len(jobs)} compiles "
          f"on {workers} processes" + ("" if run else " (compile only)"), flush=True)  # fmt: skip
    t0 = time.perf_counter()
    run_s = 0.0
    done = 0
    for res in compile_many(jobs, workers):
        done += 1
        finished = sweep.add(res)
        if finished is not None:
            t1 = time.perf_counter()
            sweep.check_program(finished)
            run_s += time.perf_counter() - t1
            bad = [c for c, cell in sweep.cells[finished].items()
                   if cell["status"] in ("failed", "error")]  # fmt: skip
            print(f"[{done}/{len(jobs)} {time.perf_counter() - t0:6.1f}s] {finished}"
                  + (f": FAILED {', '.join(bad)}" if bad else ""), flush=True)  # fmt: skip
    wall = time.perf_counter() - t0

    print()
    print(table(sweep))
    print("\nconfigurations (cells: max relative error; - refused with a located error, -L "
          "by the launch checks at these sizes; ! failed; N NaN where the reference has a "
          "value; c compiled, not run):")  # fmt: skip
    for n, f in configs.items():
        print(f"  {n:10} {options_of(f)}")
    problems = [(n, c, cell) for n, row in sweep.cells.items() for c, cell in row.items()
                if cell["status"] in ("failed", "error")]  # fmt: skip
    for n, c, cell in problems:
        what = cell.get("message") or (
            f"max error {cell.get('max_error')}" + (
                f", NaN in {', '.join(cell['nan_outputs'])}" if cell.get("nan_outputs") else ""
            )
        )  # fmt: skip
        print(f"FAILED {n} [{c}]: {what}")
    for n, row in sweep.cells.items():
        for c, cell in row.items():
            if cell["status"] == "refused" and "same_as" not in cell:
                if cell.get("message", "").startswith("refused at launch"):
                    print(f"REFUSED AT LAUNCH {n} [{c}]: {cell['message']}")
    s = summary(sweep)
    stats = compile_stats(sweep, wall, workers)
    v = versions()
    w = s["worst"]
    worst = "none" if w is None else f"{w['max_error']:.2e} ({w['program']} [{w['config']}])"
    print(
        f"\nchecked {s['checked']} ({s['distinct']} distinct kernels), refused {s['refused']}, "
        f"failed {s['failed']}, worst error {worst}, tol {args.tol:g} | {v['date']} | "
        f"{v['device'] if run else 'no GPU (compile only)'} | torch {v['torch']}, "
        f"triton {v['triton']}, tawac {v['tawac']} ({v['commit']})"
    )
    print(
        f"compiles: {stats['kernels']} in {stats['wall_s']} s on {workers} processes, "
        f"{stats['cpu_s']} process-seconds (mean {stats['mean_s']} s, slowest "
        f"{stats['slowest']['seconds']} s: {stats['slowest']['program']} "
        f"[{stats['slowest']['config']}]); GPU runs and references {run_s:.1f} s"
    )
    if args.json:
        path = json_path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            **v,
            "tol": args.tol,
            "seed": args.seed,
            "compile_only": not run,
            "configs": {n: options_of(f) for n, f in configs.items()},
            "summary": s,
            "compile": stats,
            "rows": [
                {"name": n, "source": sweep.programs[n]["source"],
                 "defines": sweep.programs[n].get("defines") or {},
                 "check_sizes": sweep.programs[n]["check_sizes"], "configs": row}
                for n, row in sweep.cells.items()
            ],
        }  # fmt: skip
        path.write_text(json.dumps(_plain(doc), indent=1) + "\n")
        print(f"wrote {path}")
    return 1 if s["failed"] else 0


def _plain(x: Any) -> Any:
    """`x` for JSON: NaN and infinities as None, tuples as lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


if __name__ == "__main__":
    sys.exit(main())
