"""The corpus benchmark: every program of corpus/corpus.json under each planner, timed in
the same run, round-robin, with the cost model's prediction next to the measurement.

Per program and planner it prints:
- the kernel's time (median of `--rounds` round-robin rounds of `bench_ms`) and
  solver / heuristic;
- correctness at the program's `check_sizes` (the float32 reference interpreter);
- the model's steady-state initiation interval `ii` (cycles per main-loop iteration, the
  simulator of `tawac explain --timeline`) and, for programs whose `loop` size lengthens
  the main loop alone, the measured time per iteration: the kernel at the size and at
  twice the `loop` size, timed in the same rounds, (t2 - t1) divided by the iterations
  each SM gained (ceil(programs / resident CTAs) x the added trip count). The model's
  error is predicted / measured - 1, both in nanoseconds, the model's cycles at the SM
  clock nvidia-smi sampled during the program's timings (printed);
- with `--trace-every N` (default 8; 0: off), the in-kernel measurement: a sampled
  instrumented build (`--trace --trace-every N`) run once at the size, its trace decoded
  (`tawac.runtime.trace.loop_intervals`) into SM cycles per iteration of each of the consumer's
  main loops, next to the model's interval of that loop (both in cycles: no clock
  conversion), and the instrumented build's own time in the same rounds (its cost).

    python3 benchmarks/bench_corpus.py                        # the whole corpus
    python3 benchmarks/bench_corpus.py --only gemm_bf16_128x128,attention_d64 --rounds 5
    python3 benchmarks/bench_corpus.py --tags gemm --json out.json
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import statistics
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "corpus" / "corpus.json"
PLANNERS = ("heuristic", "solver")


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["programs"]


def main_loop_step(kernel) -> int | None:
    """The constant step of the kernel's outermost `scf.for` holding a `tile.dot` (the
    main loop of the source program), or None."""
    from xdsl.dialects import arith, scf

    from tawac.dialects import tile

    for op in kernel.walk():
        if not isinstance(op, scf.ForOp):
            continue
        if not any(isinstance(o, tile.DotOp) for o in op.walk()):
            continue
        owner = op.step.owner
        if isinstance(owner, arith.ConstantOp):
            return owner.value.value.data
        return None
    return None


def sm_clock_ghz() -> float:
    """The SM clock now: `torch.cuda._sleep(n)` spins for n clock cycles on one SM."""
    import torch

    cycles = 20_000_000
    torch.cuda._sleep(cycles)  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(cycles)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return cycles / (statistics.median(times) * 1e-3) / 1e9


def model_intervals(src: Path, params, config: str, sizes=None) -> list[float]:
    """The model's steady-state interval (cycles) of each of the consumer's main loops,
    in order, at the dimension sizes `sizes` (`tawac.schedule.model.model_intervals`;
    `tawac explain --timeline` shows the first)."""
    from tawac.schedule import model
    from tawac.tools.calibrate import prepare

    p = prepare(src, params, config)
    return model.model_intervals(p.kernel, p.plan, sizes=sizes)


def parse_config(text: str) -> tuple[str, dict[str, Any]]:
    """`tawac.tools.calibrate.parse_config`, a bad option ending the run."""
    from tawac.tools.calibrate import parse_config as parse

    try:
        return parse(text)
    except ValueError as e:
        raise SystemExit(f"bench_corpus: {e}") from None


class Build:
    """One program compiled under one planner: the launchable kernel, its unlowered
    kernel op (the reference's), and the model's view of its schedule."""

    def __init__(self, entry: Mapping[str, Any], config: str, trace_every: int = 0):
        from tawac.driver import compile_cached, kernel_op, parse_source
        from tawac.runtime import load_kernel
        from tawac.support.diagnostics import CompileError
        from tawac.support.options import PipelineOptions
        from tawac.tools.calibrate import entry_trace_every
        from tawac.tools.explain import explain_module

        src = ROOT / entry["source"]
        params = entry.get("defines") or None
        planner, fields = parse_config(config)
        self.planner = planner
        compiled = compile_cached(src, params=params, cubin=True, schedule=planner, **fields)
        self.name = entry["name"]
        self.indices = entry.get("indices")
        self.cubin = compiled.cubin
        self.sidecar = json.loads(compiled.sidecar_text)
        self.kernel = load_kernel(compiled.cubin, self.sidecar)
        self.op = kernel_op(src, params=params)
        self.report = compiled.ptxas_report
        try:
            info = explain_module(
                parse_source(src, params=params),
                PipelineOptions(schedule=planner, **fields),
                timeline=True,
            )
        except CompileError:  # no main loop to model (a single K step): no prediction
            info = explain_module(
                parse_source(src, params=params), PipelineOptions(schedule=planner, **fields)
            )
        self.ii = info["timeline"]["ii"] if "timeline" in info else None
        self.stages = info["stages"]
        self.winner = info["planner"]
        self.step = main_loop_step(self.op)
        self.model_iis = model_intervals(src, params, config, entry.get("sizes"))
        self.traced = None
        self.traced_cubin = b""
        self.trace_every = trace_every = entry_trace_every(entry, trace_every)
        if trace_every:
            fields = {**fields, "trace": True, "trace_every": trace_every}
            t = compile_cached(src, params=params, cubin=True, schedule=planner, **fields)
            self.traced_sidecar = json.loads(t.sidecar_text)
            self.traced = load_kernel(t.cubin, self.traced_sidecar)
            self.traced_cubin = t.cubin
            self.traced_report = t.ptxas_report

    def measured_intervals(self, args: list) -> list[dict[str, Any]]:
        """The consumer's main loops' cycles per iteration, from one traced launch (after
        a warm-up launch) at `args`."""
        from tawac.tools.calibrate import consumer_intervals

        assert self.traced is not None
        out = []
        for k, iv in enumerate(consumer_intervals(self.traced, self.traced_sidecar, args)):
            out.append(
                {
                    "k": k,
                    "cycles": iv.cycles if iv is not None else None,
                    "pairs": iv.pairs if iv is not None else 0,
                    "ghz": iv.ghz if iv is not None else None,
                    "model": self.model_iis[k] if k < len(self.model_iis) else None,
                }
            )
        return out

    def args(self, sizes: Mapping[str, Any], seed: int = 0) -> list:
        from tawac.analysis.args import kernel_arg_uses
        from tawac.runtime.runner import make_args

        loads, stores = kernel_arg_uses(self.op)
        return make_args(self.sidecar, sizes, stores, loads, seed=seed, indices=self.indices)

    def check(self, sizes: Mapping[str, Any]) -> tuple[bool, float]:
        """(ok, max relative error) at `sizes` against the float32 interpreter."""
        from tawac.runtime.runner import run_kernel_file

        def compile_fn(_path):
            return self.cubin, self.sidecar, self.op

        res = run_kernel_file(self.name, sizes, None, compile_fn, check=True, rep_ms=5.0)
        return bool(res["ok"]), float(res["max_error"])

    def tiles_per_sm(self, args: list, sm_count: int) -> int:
        from tawac.runtime.runner import logical_grid

        shapes = {
            s["name"]: tuple(a.shape)
            for s, a in zip(self.sidecar["args"], args, strict=True)
            if s["kind"] == "tensor"
        }
        programs = math.prod(logical_grid(self.sidecar, shapes))
        resident = min(math.prod(self.kernel.grid(*args)), sm_count)
        return math.ceil(programs / resident)


class ClockSampler:
    """The SM clock while kernels run: `nvidia-smi` sampling every 20 ms in the
    background (None where nvidia-smi is missing). The `torch.cuda._sleep` clock is the
    clock of one busy SM; under a full load the power limit lowers it."""

    def __enter__(self):
        import shutil
        import subprocess

        exe = shutil.which("nvidia-smi")
        self.proc = None
        self.samples: list[float] = []
        if exe is not None:
            cmd = [exe, "--query-gpu=clocks.sm", "--format=csv,noheader,nounits", "-lms", "20"]
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc):
        if self.proc is None:
            return
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        for line in out.splitlines():
            try:
                self.samples.append(float(line.split(",")[0]) / 1000)
            except ValueError:
                continue

    @property
    def ghz(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


def same_builds(builds: Mapping[str, Any]) -> dict[str, str]:
    """Per planner, the first planner (in order) whose cubin and traced cubin are
    byte-identical to its own (itself when none is)."""
    first: dict[tuple[bytes, bytes], str] = {}
    out = {}
    for p, b in builds.items():
        key = (hashlib.sha256(b.cubin).digest(), hashlib.sha256(b.traced_cubin).digest())
        out[p] = first.setdefault(key, p)
    return out


def time_round_robin(fns: Mapping[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    from tawac.runtime.runner import bench_ms, round_robin

    names = list(fns)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for i in round_robin(len(names), rounds):
        samples[names[i]].append(bench_ms(fns[names[i]], 25.0, 100.0)[0])
    return {n: statistics.median(v) for n, v in samples.items()}


def bench_program(
    entry: Mapping[str, Any],
    planners: tuple[str, ...],
    rounds: int,
    sm_count: int,
    trace_every: int = 0,
) -> dict[str, Any]:
    import torch

    builds = {p: Build(entry, p, trace_every) for p in planners}
    from tawac.tools.calibrate import serialized, spills

    row: dict[str, Any] = {"name": entry["name"], "tags": entry.get("tags", []), "planners": {}}
    for p, b in builds.items():
        ok, err = b.check(entry["check_sizes"])
        row["planners"][p] = {
            "ok": ok,
            "max_error": err,
            "ii": b.ii,
            "stages": b.stages,
            "planner": b.winner,
            "spills": spills(b.report),
            "model_iis": b.model_iis,
        }
        if b.traced is not None:
            row["planners"][p]["trace_every"] = b.trace_every
            row["planners"][p]["traced_spills"] = spills(b.traced_report)
            row["planners"][p]["traced_serialized"] = serialized(b.traced_report) and not (
                serialized(b.report)
            )
    sizes = dict(entry["sizes"])
    loop = entry.get("loop")
    variants = {"": sizes}
    if loop is not None:
        variants["x2"] = {**sizes, loop: 2 * sizes[loop]}
    fns: dict[str, Callable[[], Any]] = {}
    held: dict[str, list] = {}
    # Planners whose cubins are byte-identical run one kernel: it is timed once and its
    # time is theirs (timing it twice measures only the noise between rounds).
    same = same_builds(builds)
    for p, b in builds.items():
        for tag, sz in variants.items():
            args = b.args(sz)
            held[p + tag] = args
            if same[p] == p:
                fns[p + tag] = (lambda k, a: lambda: k(*a))(b.kernel, args)
        if b.traced is not None and same[p] == p:
            fns[p + "@trace"] = (lambda k, a: lambda: k(*a))(b.traced, held[p])
    with ClockSampler() as clock:
        timed = time_round_robin(fns, rounds)
    times = {p + tag: timed[same[p] + tag] for p in builds for tag in (*variants, "@trace")
             if same[p] + tag in timed}  # fmt: skip
    for p in builds:
        if same[p] != p:
            row["planners"][p]["same_as"] = same[p]
    # The clock the kernels ran at (nvidia-smi's samples during the timings), else the
    # clock of one busy SM right after them.
    row["ghz"] = clock.ghz or sm_clock_ghz()
    row["ghz_samples"] = len(clock.samples)
    for p, b in builds.items():
        r = row["planners"][p]
        r["ms"] = times[p]
        if b.traced is not None:
            r["traced_ms"] = times[p + "@trace"]
            r["trace"] = b.measured_intervals(held[p])
        if loop is None or b.step is None:
            continue
        added = (variants["x2"][loop] - sizes[loop]) // b.step
        per_sm = b.tiles_per_sm(held[p], sm_count) * added
        r["measured_ns_per_iter"] = (times[p + "x2"] - times[p]) * 1e6 / per_sm
    del held, fns
    torch.cuda.empty_cache()
    return row


def auto_summary(rows: list[dict[str, Any]], planners: tuple[str, ...]) -> None:
    """With the heuristic, the solver and auto measured: auto's time against the faster of
    the two per program (at least 0.98x on each), and the geomeans over the
    programs that are not examples of auto and of the faster (an oracle) against the
    heuristic."""
    if not {"heuristic", "solver", "auto"} <= set(planners) or not rows:
        return
    vs_best, vs_h, oracle = [], [], []
    for r in rows:
        t = {p: r["planners"][p]["ms"] for p in ("heuristic", "solver", "auto")}
        best = min(t["heuristic"], t["solver"])
        vs_best.append((best / t["auto"], r["name"], r["planners"]["auto"].get("same_as")))
        if "example" not in r.get("tags", []):
            vs_h.append(t["heuristic"] / t["auto"])
            oracle.append(t["heuristic"] / best)

    def geo(xs: list[float]) -> float:
        return math.exp(statistics.fmean(math.log(x) for x in xs))

    below = sorted(x for x in vs_best if x[0] < 0.98)
    print(
        f"auto / the faster of heuristic and solver: geomean {geo([x[0] for x in vs_best]):.3f}, "
        f"lowest {min(x[0] for x in vs_best):.3f}, {len(below)} of {len(vs_best)} below 0.98"
        + "".join(f"\n  {n}: {x:.3f} (auto = {s or 'its own'})" for x, n, s in below)
    )
    if vs_h:
        print(
            f"non-example programs ({len(vs_h)}), speed-up over the heuristic: auto "
            f"{geo(vs_h):.3f}, the faster of the two (oracle) {geo(oracle):.3f}"
        )


def trace_errors(rows: list[dict[str, Any]], planners: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per (program, planner, consumer main loop) with a traced measurement: the model's
    interval / the measured one - 1 (both in cycles), and whether the traced build is
    perturbed (`tawac.tools.calibrate.perturbed`: it spills or runs far slower than the plain)."""
    from tawac.tools.calibrate import perturbed

    out = []
    for r in rows:
        if "error" in r:
            continue
        for p in planners:
            for t in r["planners"][p].get("trace", []):
                if t["cycles"] and t["model"]:
                    out.append(
                        {
                            "name": r["name"],
                            "planner": p,
                            "k": t["k"],
                            "model": t["model"],
                            "measured": t["cycles"],
                            "error": t["model"] / t["cycles"] - 1,
                            "perturbed": perturbed(r["planners"][p]),
                        }
                    )
    return out


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table(rows: list[dict[str, Any]], planners: tuple[str, ...]) -> list[str]:
    """Markdown rows; the model's nanoseconds at each row's measured SM clock."""
    head = ["program", "GHz"]
    for p in planners:
        head += [f"{p} ms", f"{p} ok", f"{p} ii", f"{p} ns/it meas", f"{p} ns/it model", "err"]
        head += [f"{p} ii traced", "err", "traced cost"]
    if len(planners) == 2:
        head.append(f"{planners[0]} ms / {planners[1]} ms")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['name']} | error: {row['error']} |")
            continue
        ghz = row["ghz"]
        cells = [row["name"], f"{ghz:.2f}"]
        for p in planners:
            r = row["planners"][p]
            meas = r.get("measured_ns_per_iter")
            model = r["ii"] / ghz if r["ii"] else None
            err = model / meas - 1 if meas and model else None
            cells += [
                _fmt(r["ms"], ".4f"),
                "ok" if r["ok"] else f"OFF {r['max_error']:.1e}",
                _fmt(r["ii"], ".0f"),
                _fmt(meas, ".0f"),
                _fmt(model, ".0f"),
                "-" if err is None else f"{err * 100:+.0f}%",
            ]
            traced = [t for t in r.get("trace", []) if t["cycles"]]
            terr = [t["model"] / t["cycles"] - 1 for t in traced if t["model"]]
            mark = "*" if r.get("traced_spills") else ""
            cells += [
                " / ".join(f"{t['cycles']:.0f}" for t in traced) + mark if traced else "-",
                " / ".join(f"{e * 100:+.0f}%" for e in terr) if terr else "-",
                f"{r['traced_ms'] / r['ms']:.2f}x" if r.get("traced_ms") else "-",
            ]
        if len(planners) == 2:
            a, b = (row["planners"][p]["ms"] for p in planners)
            cells.append(f"{a / b:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _write(path: Path, device: str, ghz: list[float], rows: list[dict[str, Any]]) -> None:
    from tawac.target import HOPPER

    doc = {"device": device, "ghz": ghz, "model": HOPPER.calibration, "rows": rows}
    path.write_text(json.dumps(doc, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(CORPUS), help="the manifest (corpus/corpus.json)")
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--tags", default="", help="comma-separated tags (any of them)")
    ap.add_argument(
        "--planners",
        default=",".join(PLANNERS),
        help="configurations to compare: planners, optionally with options "
        "(heuristic,heuristic:stages=5,solver)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--part", default="", help="I/N: the I-th of N equal slices (1-based)")
    ap.add_argument(
        "--trace-every",
        type=int,
        default=8,
        help="measure each main loop in a sampled instrumented build (every N-th "
        "iteration stamped; 0: no instrumented build)",
    )
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args(argv)

    import torch

    entries = load_corpus(Path(args.corpus))
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    if args.tags:
        tags = set(args.tags.split(","))
        entries = [e for e in entries if tags & set(e.get("tags", []))]
    if args.part:
        i, n = (int(x) for x in args.part.split("/"))
        entries = entries[(i - 1) * len(entries) // n : i * len(entries) // n]
    planners = tuple(args.planners.split(","))
    dev = torch.cuda.get_device_properties(0)
    ghz = sm_clock_ghz()
    print(
        f"# corpus benchmark, {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{dev.name}, {dev.multi_processor_count} SMs, SM clock {ghz:.3f} GHz idle (measured), "
        f"{args.rounds} round-robin rounds"
    )
    rows = []
    for e in entries:
        try:
            rows.append(
                bench_program(e, planners, args.rounds, dev.multi_processor_count, args.trace_every)
            )
        except Exception as exc:  # one program's failure is a row, not the end of the run
            traceback.print_exc()
            rows.append({"name": e["name"], "error": f"{type(exc).__name__}: {exc}"[:200]})
        print(table(rows[-1:], planners)[-1], flush=True)
        if args.json:  # after every row: a run cut short keeps what it measured
            _write(Path(args.json), dev.name, [ghz], rows)
    ghz_end = sm_clock_ghz()
    print(f"\nSM clock at the end: {ghz_end:.3f} GHz\n")
    print("\n".join(table(rows, planners)))
    ok = [r for r in rows if "error" not in r]
    if len(planners) == 2 and ok:
        ratios = [r["planners"][planners[0]]["ms"] / r["planners"][planners[1]]["ms"] for r in ok]
        geo = math.exp(statistics.fmean(math.log(x) for x in ratios))
        print(f"\ngeomean {planners[0]} time / {planners[1]} time: {geo:.3f} over {len(ok)}")
    auto_summary(ok, planners)
    errs = [
        abs(r["planners"][p]["ii"] / r["ghz"] / r["planners"][p]["measured_ns_per_iter"] - 1)
        for r in ok
        for p in planners
        if r["planners"][p].get("measured_ns_per_iter")
    ]
    if errs:
        print(
            f"model error |predicted/measured - 1| per iteration: median "
            f"{statistics.median(errs) * 100:.0f}%, worst {max(errs) * 100:.0f}% "
            f"over {len(errs)} (program, planner) pairs"
        )
    terrs = trace_errors(rows, planners)
    if terrs:
        from tawac.tools.calibrate import PERTURBED_COST

        clean = [abs(t["error"]) for t in terrs if not t["perturbed"]]
        every = [abs(t["error"]) for t in terrs]
        print(
            f"model error |model/traced - 1| per main loop (cycles): median "
            f"{statistics.median(every) * 100:.0f}%, worst {max(every) * 100:.0f}% over "
            f"{len(every)} (program, planner, loop); without the {len(every) - len(clean)} "
            f"whose traced build is perturbed (spills, or runs over "
            f"{PERTURBED_COST}x the plain): median {statistics.median(clean) * 100:.0f}%, "
            f"worst {max(clean) * 100:.0f}%"
            if clean
            else "model error: every traced build is perturbed"
        )
        worst = sorted(terrs, key=lambda t: (t["perturbed"], -abs(t["error"])))[:8]
        for t in worst:
            print(
                f"  {t['name']} {t['planner']} loop {t['k']}: model {t['model']:.0f}, "
                f"measured {t['measured']:.0f} cycles ({t['error'] * 100:+.0f}%)"
            )
    costs = [
        r["planners"][p]["traced_ms"] / r["planners"][p]["ms"]
        for r in ok
        for p in planners
        if r["planners"][p].get("traced_ms")
    ]
    if costs:
        geo = math.exp(statistics.fmean(math.log(x) for x in costs))
        print(
            f"instrumented build's own cost (traced time / plain time): geomean {geo:.3f}, "
            f"worst {max(costs):.3f} over {len(costs)}"
        )
    if args.json:
        _write(Path(args.json), dev.name, [ghz, ghz_end], rows)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    from results import run_recorded

    sys.exit(run_recorded("corpus", main))
