"""`tawac calibrate`: fit the cost model's figures to loops measured on the GPU.

The ground truth is the steady-state interval of each consumer main loop, in SM cycles,
of a corpus of programs under each planner, measured in a sampled instrumented build
(`tawac.runtime.trace.loop_intervals`; docs/design/schedule.md, "Calibration"). The
model's answer for the same schedule is `simulate(loop_lanes(kernel, plan, k, target))`.
`fit` searches the figures of `tawac.target.calibration.PARAMS` for the target whose
answers are nearest the measurements (the score: the mean of |log(model / measured)|
plus a quarter of the worst), one figure at a time over a grid around the current value, until
no step improves; `write` stores the result as a calibration file that every planner
reads (`tawac.target.HOPPER`).

Observations come from a GPU run (`measure`, one worker process per local GPU) or from
the JSON rows of `benchmarks/bench_corpus.py --json` (`observations_from_bench`).
A traced build whose registers spill is perturbed by its own instrumentation: its
loops are left out.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, Target
from tawac.target.calibration import PARAMS, params_of, with_params

ROOT = Path(__file__).resolve().parents[2]

#: The grid of relative steps `fit` tries around a figure's current value.
STEPS = (0.6, 0.8, 0.92, 1.08, 1.25, 1.6)
#: Absolute steps for the figures that start at 0 (cycles).
CYCLE_STEPS = (0.0, 16.0, 32.0, 64.0, 128.0)


@dataclass(frozen=True)
class Observation:
    """One consumer main loop measured on the GPU: program, planner configuration, loop
    index, its cycles per iteration, and the dimension sizes it ran at."""

    name: str
    source: str
    defines: Mapping[str, Any]
    config: str
    k: int
    cycles: float
    sizes: Mapping[str, Any] | None = None


@dataclass
class Prepared:
    """A program planned as its measured build was: the kernel after `plan`, the
    schedule, and the observations of its loops."""

    kernel: Any
    plan: Any
    observations: list[Observation] = field(default_factory=list)
    sizes: Mapping[str, Any] | None = None  # the sizes the loops ran at

    def predict(self, target: Target) -> list[float | None]:
        """The model's interval (cycles) of each observed loop under `target`, at the
        sizes they ran at."""
        from tawac.schedule.model import model_intervals

        iis = model_intervals(self.kernel, self.plan, target=target, sizes=self.sizes)
        return [iis[o.k] if o.k < len(iis) else None for o in self.observations]


def parse_config(text: str) -> tuple[str, dict[str, Any]]:
    """A planner configuration: a planner, optionally with pipeline options, as
    "heuristic" or "heuristic:stages=5:mma-depth=1" (option names as on the command
    line). Returns (planner, `PipelineOptions` fields); ValueError on an unknown option."""
    from tawac.support.options import KNOBS

    planner, *opts = text.split(":")
    fields: dict[str, Any] = {}
    by_flag = {k.name.replace("_", "-"): k for k in KNOBS}
    for item in opts:
        name, sep, value = item.partition("=")
        knob = by_flag.get(name)
        if knob is None or not sep:
            raise ValueError(f"bad option {item!r} in configuration {text!r}")
        if knob.type is bool:
            if value.lower() not in ("0", "1", "false", "true"):
                raise ValueError(
                    f"bad option {item!r} in configuration {text!r}: {knob.name} takes "
                    "0, 1, false or true (options go one per ':')"
                )
            fields[knob.name] = value.lower() in ("1", "true")
            continue
        fields[knob.name] = knob.type(value)
    return planner, fields


def plan_options(config: str):
    """The pipeline options of a planner configuration (`parse_config`)."""
    from tawac.support.options import PipelineOptions

    planner, fields = parse_config(config)
    return PipelineOptions(schedule=planner, **fields)


def prepare(source: Path, defines: Mapping[str, Any] | None, config: str) -> Prepared:
    """`source` planned under `config`, as far as the model reads it."""
    from tawac import schedule
    from tawac.compiler import run_pipeline
    from tawac.driver import parse_source
    from tawac.tools.explain import _kernel

    module = parse_source(source, params=dict(defines) if defines else None)
    kernel = _kernel(module)
    run_pipeline(module, plan_options(config).pipeline(stop="pipeline"))
    return Prepared(kernel, schedule.of(kernel))


#: A traced build this much slower than the plain one (its whole kernel time) measures
#: a loop the instrumentation changed: a release one iteration late (`mma-depth 1`) traced
#: runs 1.22-1.32x the plain kernel (H100, docs/perf.md), most builds 1.00-1.10x.
PERTURBED_COST = 1.15


def perturbed(r: Mapping[str, Any]) -> bool:
    """Whether a benchmark row's traced build is no measurement of its plain build: it
    spills, ptxas serialized its wgmmas where the plain build's are not (C7514: every
    traced loop that keeps an MMA in flight across iterations, a release lag, measured
    1.22-1.32x the plain kernel), or it runs more than `PERTURBED_COST` times the plain
    build's time."""
    if r.get("traced_spills") or r.get("traced_serialized"):
        return True
    ms, traced = r.get("ms"), r.get("traced_ms")
    return bool(ms and traced and traced / ms > PERTURBED_COST)


def _bench_rows(
    docs: Iterable[Mapping[str, Any]], corpus: list[dict]
) -> Iterable[tuple[dict, Mapping[str, Any]]]:
    """(corpus entry, row) of every benchmarked program of `benchmarks/bench_corpus.py
    --json` documents that the corpus names and that did not fail."""
    by_name = {e["name"]: e for e in corpus}
    for doc in docs:
        for row in doc["rows"]:
            entry = by_name.get(row["name"])
            if entry is not None and "error" not in row:
                yield entry, row


def observations_from_bench(
    docs: Iterable[Mapping[str, Any]], corpus: list[dict]
) -> list[Observation]:
    """The traced loops of `benchmarks/bench_corpus.py --json` documents, but those of
    perturbed builds (`perturbed`)."""
    out = []
    for entry, row in _bench_rows(docs, corpus):
        for config, r in row["planners"].items():
            if perturbed(r):
                continue
            for t in r.get("trace", []):
                if t.get("cycles"):
                    out.append(
                        Observation(
                            row["name"],
                            entry["source"],
                            entry.get("defines") or {},
                            config,
                            int(t["k"]),
                            float(t["cycles"]),
                            entry.get("sizes"),
                        )
                    )
    return out


def _compared(
    docs: Iterable[Mapping[str, Any]], corpus: list[dict], root: Path
) -> list[tuple[str, Prepared, Prepared, float, float]]:
    """Per program whose heuristic and solver builds differ and were both timed: its kind
    of consumer main loop (`tawac.analysis.kinds.schedule_kind`, with the heuristic's
    warp groups, as the `auto` planner classifies it), both planned as they ran, and the
    measured whole-kernel times (heuristic, solver)."""
    from tawac.analysis.kinds import schedule_kind

    out = []
    for entry, row in _bench_rows(docs, corpus):
        h, s = row["planners"].get("heuristic"), row["planners"].get("solver")
        if not h or not s or s.get("same_as") == "heuristic":
            continue
        if not h.get("ms") or not s.get("ms"):
            continue
        src, defines = root / entry["source"], entry.get("defines") or {}
        ph, ps = prepare(src, defines, "heuristic"), prepare(src, defines, "solver")
        out.append((schedule_kind(ph.kernel, ph.plan), ph, ps, h["ms"], s["ms"]))
    return out


def planner_errors(
    docs: Iterable[Mapping[str, Any]],
    corpus: list[dict],
    root: Path = ROOT,
    preference: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """Per kind of consumer main loop (`tawac.analysis.kinds`), the margin the `auto`
    planner's model must show before its price decides (`Target.model_error_for`), from
    the benchmark's programs of that kind whose heuristic and solver builds differ:

    - the model's error in comparing the two schedules of one program, |(predicted
      solver / heuristic) / (measured solver / heuristic) - 1| (the prediction: what
      `auto` prices at compile time, `tawac.schedule.auto.cost`; the measurement: the
      whole-kernel times), its median over the programs;
    - unless a threshold on the margin separates the programs better: the margins where
      `auto`, deciding by them (`tawac.schedule.auto.decide`: the model's faster
      proposal at or above them, the kind's `preference` below where the solver's is
      priced cheaper), loses least time against the faster build (the sum of
      log(chosen / faster) over the programs) form intervals; where the median lies in
      none of them, the midpoint of the one nearest it. (On the H100 corpus the model
      prices the solver's attention schedules 13-28% cheaper on every program, 20% more
      than measured at the median, and the programs it measured faster are those priced
      at least 20.2% cheaper, the others at most 17.1%: docs/perf.md, 2026-11-26.)"""
    from tawac.schedule.auto import cost, margin

    preference = preference if preference is not None else planner_preference(docs, corpus, root)
    cases: dict[str, list[tuple[float | None, str, float, float]]] = {}
    errors: dict[str, list[float]] = {}
    for kind, ph, ps, h_ms, s_ms in _compared(docs, corpus, root):
        ch, cs = cost(ph.kernel, ph.plan), cost(ps.kernel, ps.plan)
        if not ch or not cs:
            continue
        errors.setdefault(kind, []).append(abs((cs / ch) / (s_ms / h_ms) - 1))
        faster = "solver" if cs < ch else "heuristic"
        m = margin(min(cs, ch), max(cs, ch))
        cases.setdefault(kind, []).append((m, faster, h_ms, s_ms))
    out = {}
    for kind, found in sorted(errors.items()):
        median = 100 * statistics.median(found)
        tau = _threshold(cases[kind], preference.get(kind, "heuristic"), median)
        out[kind] = round(tau / 100, 4)
    return out


def _threshold(
    cases: list[tuple[float | None, str, float, float]], preferred: str, median: float
) -> float:
    """`planner_errors`' margin (percent) for one kind: `median` where it loses least,
    else the midpoint of the least-losing interval of margins nearest it."""

    from tawac.schedule.auto import decide

    def loss(tau: float) -> float:
        total = 0.0
        for m, faster, h_ms, s_ms in cases:
            _, pick = decide(m, faster, tau, preferred)
            total += math.log((h_ms if pick == "heuristic" else s_ms) / min(h_ms, s_ms))
        return total

    margins = sorted({m for m, *_ in cases if m is not None and m > 0})
    # the decisions change only at the margins: tau in (lo, hi] decides alike
    edges = [0.0, *margins, (margins[-1] if margins else 0.0) + 2.0]
    intervals = list(zip(edges, edges[1:], strict=False))
    best = min(loss(hi) for _, hi in intervals)
    if loss(median) <= best + 1e-9:
        return median
    good = [(lo, hi) for lo, hi in intervals if loss(hi) <= best + 1e-9]
    lo, hi = min(good, key=lambda iv: min(abs(median - iv[0]), abs(median - iv[1])))
    return (lo + hi) / 2


def planner_preference(
    docs: Iterable[Mapping[str, Any]], corpus: list[dict], root: Path = ROOT
) -> dict[str, str]:
    """Per kind of consumer main loop, the planner whose schedules the benchmark measured
    faster: the solver where the geometric mean over the programs of that kind whose two
    builds differ of (heuristic time / solver time) is above 1, else the heuristic (what
    the `auto` planner takes where the model's margin is within its error)."""
    logs: dict[str, list[float]] = {}
    for kind, _, _, h_ms, s_ms in _compared(docs, corpus, root):
        logs.setdefault(kind, []).append(math.log(h_ms / s_ms))
    return {
        k: "solver" if statistics.fmean(v) > 0 else "heuristic" for k, v in sorted(logs.items())
    }


def prepare_all(observations: list[Observation], root: Path = ROOT) -> list[Prepared]:
    """Each (program, configuration) of `observations` planned once."""
    groups: dict[tuple[str, str], Prepared] = {}
    for o in observations:
        key = (o.name, o.config)
        if key not in groups:
            groups[key] = prepare(root / o.source, o.defines, o.config)
            groups[key].sizes = o.sizes
        groups[key].observations.append(o)
    return list(groups.values())


def errors(preps: list[Prepared], target: Target) -> list[tuple[Observation, float]]:
    """(observation, model / measured - 1) of every loop the model can answer."""
    out = []
    for p in preps:
        for o, ii in zip(p.observations, p.predict(target), strict=True):
            if ii is not None:
                out.append((o, ii / o.cycles - 1))
    return out


def score(errs: list[tuple[Observation, float]]) -> float:
    """What `fit` minimizes: mean |log(model / measured)| plus a quarter of the worst."""
    logs = [abs(math.log1p(e)) for _, e in errs]
    return statistics.fmean(logs) + 0.25 * max(logs) if logs else math.inf


def summary(errs: list[tuple[Observation, float]]) -> dict[str, float]:
    """Median and worst |model / measured - 1| over the loops."""
    a = [abs(e) for _, e in errs]
    return {"loops": len(a), "median": statistics.median(a), "worst": max(a)} if a else {}


def fit(
    preps: list[Prepared],
    base: Target = HOPPER,
    params: tuple[str, ...] = PARAMS,
    rounds: int = 6,
    log=None,
    start: Mapping[str, float] | None = None,
) -> tuple[Target, dict[str, float]]:
    """Coordinate descent over `params` from `base`'s figures, or from `start` where it
    gives them (module docstring)."""
    current = {**params_of(base), **(start or {})}
    best_target = with_params(base, current, "fit")
    best = score(errors(preps, best_target))
    for r in range(rounds):
        improved = False
        for name in params:
            value = current[name]
            tries = [value * s for s in STEPS] if value else list(CYCLE_STEPS)
            if name in ("mma_group_cycles", "get_cycles"):
                tries += [value + d for d in (-8.0, -4.0, 4.0, 8.0) if value + d >= 0]
            for v in tries:
                trial = {**current, name: v}
                t = with_params(base, trial, "fit")
                s = score(errors(preps, t))
                if s < best - 1e-9:
                    best, current, best_target, improved = s, trial, t, True
            if log is not None:
                log(f"round {r + 1}, {name} = {current[name]:.4g}: score {best:.4f}")
        if not improved:
            break
    return best_target, current


def write(
    path: Path,
    params: Mapping[str, float],
    device: str,
    before: Mapping[str, float],
    after: Mapping[str, float],
    sources: list[str],
    kinds: Mapping[str, float] | None = None,
    preference: Mapping[str, str] | None = None,
    model: Mapping[str, Any] | None = None,
) -> None:
    """A calibration file (tawac/target/calibration.py); `kinds`: `planner_errors`;
    `preference`: `planner_preference`; `model`: the rules fitted under (`MODEL_FIELDS`)."""
    doc = {
        "device": device,
        "date": f"{datetime.date.today():%Y-%m-%d}",
        "params": {k: round(v, 4) for k, v in params.items()},
        "fit": {
            "loops": after.get("loops", 0),
            "median_error": round(after.get("median", 0.0), 4),
            "worst_error": round(after.get("worst", 0.0), 4),
            "uncalibrated_median_error": round(before.get("median", 0.0), 4),
            "uncalibrated_worst_error": round(before.get("worst", 0.0), 4),
        },
        "measurements": sources,
    }
    if model:
        doc["model"] = {k: list(v) if isinstance(v, tuple) else v for k, v in model.items()}
    if kinds:
        doc["planner_errors"] = dict(kinds)
    if preference:
        doc["planner_preference"] = dict(preference)
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


#: Milliseconds of back-to-back launches before a traced measurement: the SM clock ramps
#: to its loaded state. Without them, the first of a program's traced launches ran after
#: the host's work between benchmarks at 1.39 GHz where the next ran at 1.63 (H100,
#: docs/perf.md, 2026-11-26), and a loop that waits on memory took 12-18% fewer cycles.
WARM_MS = 30.0
#: Traced launches measured; each loop's interval is their median.
TRACED_LAUNCHES = 3


def consumer_intervals(kernel, sidecar: Mapping[str, Any], args: list) -> list[Any]:
    """The consumer's sampled main loops' `tawac.runtime.trace.LoopInterval`s, in order (None for
    a loop the trace did not catch): per loop, the median-cycles one of
    `TRACED_LAUNCHES` traced launches, after `WARM_MS` of launches."""
    import time

    import torch

    from tawac.runtime.trace import loop_intervals

    table = sidecar["trace"]
    start = time.perf_counter()
    while True:
        for _ in range(4):
            kernel(*args)
        torch.cuda.synchronize()
        if (time.perf_counter() - start) * 1e3 >= WARM_MS:
            break
    sampled = sorted(
        {e["loop"] for e in table["events"] if e.get("sampled") and e["role"] == "consumer"}
    )
    runs: dict[int, list[Any]] = {loop: [] for loop in sampled}
    for _ in range(TRACED_LAUNCHES):
        kernel(*args)
        torch.cuda.synchronize()
        got = {(iv.role, iv.loop): iv for iv in loop_intervals(kernel.last_trace, table)}
        for loop in sampled:
            if ("consumer", loop) in got:
                runs[loop].append(got["consumer", loop])
    return [_median_interval(runs[loop]) for loop in sampled]


def _median_interval(found: list[Any]) -> Any:
    """The interval of median cycles (the lower middle one of an even count); None of
    none."""
    if not found:
        return None
    ordered = sorted(found, key=lambda iv: iv.cycles)
    return ordered[(len(ordered) - 1) // 2]


def serialized(report: str) -> bool:
    """Whether ptxas's report says it serialized a kernel's wgmmas (C7514, "wgmma.mma_async
    instructions are serialized due to ...")."""
    return "C7514" in report


def spills(report: str) -> bool:
    """Whether ptxas's report of a kernel shows register spills."""
    import re

    return re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report) is None


def entry_trace_every(entry: Mapping[str, Any], trace_every: int) -> int:
    """The sampling period a corpus program's traced build takes: its entry's own
    `trace_every` (a program whose loops run only a few iterations a program at its sizes
    needs a short period to see two samples in one program; at least 2: a period of 1
    stamps each op's span, not the iterations `loop_intervals` reads) over the run's,
    where the run traces at all (0: off)."""
    return int(entry.get("trace_every", trace_every)) if trace_every else 0


def measure_entry(entry: Mapping[str, Any], config: str, trace_every: int, root: Path = ROOT):
    """One corpus program's observations under `config` on the current GPU (none when
    its traced build spills); sampled every `entry_trace_every` iterations."""
    import dataclasses

    from tawac.analysis.args import kernel_arg_uses
    from tawac.driver import compile_cached, kernel_op
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import make_args

    src = root / entry["source"]
    params = entry.get("defines") or None
    options = dataclasses.asdict(plan_options(config))
    options.update(trace=True, trace_every=entry_trace_every(entry, trace_every))
    built = compile_cached(src, params=params, cubin=True, **options)
    if spills(built.ptxas_report):
        return []
    sidecar = json.loads(built.sidecar_text)
    kernel = load_kernel(built.cubin, sidecar)
    loads, stores = kernel_arg_uses(kernel_op(src, params=params))
    args = make_args(sidecar, entry["sizes"], stores, loads, indices=entry.get("indices"))
    return [
        Observation(
            entry["name"],
            entry["source"],
            entry.get("defines") or {},
            config,
            k,
            float(iv.cycles),
            entry.get("sizes"),
        )
        for k, iv in enumerate(consumer_intervals(kernel, sidecar, args))
        if iv is not None and iv.cycles
    ]


def measure(
    corpus: list[dict], planners: tuple[str, ...], trace_every: int, log=print
) -> tuple[str, list[Observation]]:
    """Every (program, planner)'s observations, spread over the local GPUs (one worker
    process per device: `tawac.runtime.devices.per_device`). Returns (device name,
    observations)."""
    import functools

    from tawac.runtime.devices import device_count, per_device

    devices = device_count()
    if devices == 0:
        raise CompileError("tawac calibrate needs a GPU (or --from a benchmark's JSON)")
    jobs = [(e, p) for e in corpus for p in planners]
    fn = functools.partial(_measure_job, trace_every=trace_every)
    outcomes = per_device(fn, jobs, devices)
    out: list[Observation] = []
    for job, o in zip(jobs, outcomes, strict=True):
        if o.error is not None:
            log(f"calibrate: {job[0]['name']} {job[1]}: {o.error}")
        else:
            out.extend(o.value)
    names = {o.device for o in outcomes if o.device != "?"}
    return " + ".join(sorted(names)), out


def _measure_job(job: tuple[Mapping[str, Any], str], trace_every: int) -> list[Observation]:
    entry, config = job
    return measure_entry(entry, config, trace_every)


def calibrate_command(
    corpus_path: Path,
    bench: list[Path],
    planners: tuple[str, ...],
    *,
    only: list[str],
    trace_every: int,
    rounds: int,
    output: Path | None,
) -> None:
    """`tawac calibrate` (cli.py)."""
    from tawac.target import Target

    corpus = json.loads(Path(corpus_path).read_text())["programs"]
    if only:
        corpus = [e for e in corpus if e["name"] in set(only)]
    if bench:
        docs = [json.loads(Path(p).read_text()) for p in bench]
        for p, d in zip(bench, docs, strict=True):
            if d.get("model", "") != HOPPER.calibration:
                raise CompileError(
                    f"tawac calibrate: {p} was measured under the model "
                    f"'{d.get('model') or 'uncalibrated'}', this one is "
                    f"'{HOPPER.calibration or 'uncalibrated'}': its schedules would not be "
                    "planned again as they ran (set TAWAC_TARGET_MODEL to that model's "
                    "file, or none)"
                )
        observations = observations_from_bench(docs, corpus)
        device = " + ".join(sorted({d.get("device", "?") for d in docs}))
        sources = [str(p) for p in bench]
    else:
        device, observations = measure(corpus, planners, trace_every)
        sources = [f"tawac calibrate on {device}, {len(corpus)} programs x {planners}"]
    if not observations:
        raise CompileError("tawac calibrate: no loop was measured: nothing to fit")
    preps = prepare_all(observations)
    # The schedules were planned by the model in force; the fit starts from the table.
    base = Target()
    before = summary(errors(preps, base))
    print(
        f"{before['loops']} loops on {device}; uncalibrated model: median error "
        f"{before['median']:.1%}, worst {before['worst']:.1%}"
    )
    target, params = fit(preps, base, rounds=rounds, log=print)
    errs = errors(preps, target)
    after = summary(errs)
    print(f"calibrated: median error {after['median']:.1%}, worst {after['worst']:.1%}")
    for name, value in params.items():
        print(f"  {name} = {value:.4g}")
    for o, e in sorted(errs, key=lambda x: -abs(x[1]))[:8]:
        print(f"  {o.name} {o.config} loop {o.k}: measured {o.cycles:.0f} cycles, {e:+.0%}")
    preference = planner_preference(docs, corpus) if bench else {}
    for kind, planner in preference.items():
        print(f"  {kind} loops: the {planner}'s schedules measured faster")
    kinds = planner_errors(docs, corpus, preference=preference) if bench else {}
    for kind, e in kinds.items():
        print(f"  {kind} loops: the model's price decides from a margin of {e:.1%}")
    if output is not None:
        write(output, params, device, before, after, sources, kinds, preference)
        print(f"wrote {output}")
