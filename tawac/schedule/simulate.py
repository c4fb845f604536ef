"""The timeline simulator: a steady-state run of a warp-specialized loop on one SM.

Independent of the IR: a loop is a few `Lane`s (the producer, each consumer warp group),
each a list of `Step`s in issue order, with `Dep`s between steps (an aref's full and empty
barriers, a result awaited, a loop-carried value); a step's costs are those of the cost
model (`tawac.schedule.cost.OpCost`), and `tawac.schedule.model.loop_lanes` builds the
lanes of a kernel's main loops. `simulate` runs every lane's body for a number of
iterations on one SM's units and records what ran when and why a lane waited (a
`Timeline`); the solver planner arbitrates with it and `tawac.tools.timeline.render_svg` draws it.

Simulation rules (all times in cycles, floats):

- Every lane issues in order. A lane runs its body `iterations + max stage` times (trips);
  a step of stage `s` runs in trip `i` on iteration `i - s` when `0 <= i - s < iterations`
  (software pipelining: the prologue and epilogue trips run only the stages that have work).
- A step starts when (1) its lane has finished issuing the step before it (that step's start
  + `issue`), (2) each dep is ready: the awaited step, on iteration `j - distance` (`j` the
  iteration this step works on), started + its `latency` ago; deps on iterations below 0 are
  ready at time 0, and (3) its unit is free: "tensor", "tma", "mufu", "fma" and "shfl" are per
  SM, shared by all lanes, busy from a step's start for its `occupancy`; "sync" and "alu" are
  never contended.
- Among the lanes' next steps, the one that can start earliest goes first. On a tie (a
  unit frees while several lanes wait for it), the one that has waited longest, where each
  lane counts `HEAD_START` cycles of waiting more than the lane after it in lane order (the
  producer, then consumer wg0, wg1, ...), then lane order: as a greedy-then-oldest warp
  scheduler, the first consumer warp group keeps a shared pipe and the others fill its
  gaps, but one that has waited long enough goes first. (Taking turns strictly, the longest
  waiting first, kept two consumer warp groups in a convoy, both in their softmax at once,
  where the measured ones run out of phase: d64 attention with 128-row blocks was priced
  25-35% slow; docs/perf.md.)
- A lane that cannot start its next step as soon as it is free waits: first for the latest
  dep (a wait labelled with the dep's label; an aref wait when the label names a full or
  empty barrier or an aref), then for the unit (labelled "<unit> busy").
- The initiation interval (II) is the average distance between the starts of consecutive
  iterations over the last half of the run (rounded down to a multiple of 12 iterations when
  the run is long enough, so periodic patterns of period 1, 2, 3, 4 or 6 average exactly);
  the kernel's II is the slowest lane's. Utilisation: each unit's busy time over that window.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tawac.target import HOPPER

#: Units per SM that lanes contend for, in drawing order.
CONTENDED = HOPPER.contended_units
#: Every unit a step may name.
UNITS = HOPPER.units

_AREF_WAIT = re.compile(r"\b(full|empty)\b|aref", re.IGNORECASE)
_PERIOD = 12  # the steady window spans a multiple of this many iterations when it can
#: Cycles of priority each lane has over the next in lane order (module docstring).
HEAD_START = 64.0


@dataclass(frozen=True)
class Dep:
    """A step waits for step `step` of lane `lane` ("" = its own lane) on the iteration
    `distance` iterations back (0: the same iteration). `label` names the wait in the
    picture ("full aref1", "empty aref0", "S ready")."""

    lane: str
    step: int
    distance: int = 0
    label: str = ""
    ring: int | None = None
    """For an empty-barrier wait: the ring (aref index) whose depth sets `distance`."""


@dataclass(frozen=True)
class Step:
    """One op of a loop body: its unit and costs (cycles; `tawac.schedule.cost.OpCost`'s
    fields), what it waits for, and its software-pipeline stage (in trip `i` it works on
    iteration `i - stage`)."""

    label: str
    unit: str
    issue: float
    occupancy: float
    latency: float
    deps: tuple[Dep, ...] = ()
    stage: int = 0
    source: int = -1
    """The number of the loop body's scheduled op this step is (a part of); -1: none."""


@dataclass(frozen=True)
class Lane:
    """One issuing warp group (or set of them acting as one): `name` ("producer",
    "consumer wg0"), `role` ("producer", "consumer"), and its loop body in issue order."""

    name: str
    role: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Run:
    """One executed step: on `iteration`, in the lane's trip `trip`. The lane issues it
    over [start, issue_end]; its unit is busy over [unit_start, unit_end]; its result is
    usable from `ready`."""

    lane: str
    step: int
    label: str
    unit: str
    iteration: int
    trip: int
    start: float
    issue_end: float
    unit_start: float
    unit_end: float
    ready: float


@dataclass(frozen=True)
class Wait:
    """A stall of `lane` over [start, end] before it could start step `step` of
    `iteration`. `kind`: "aref" (a full or empty barrier), "dep" (another result) or
    "unit" (the unit was busy); `on`: the awaited "lane:step" or the unit's name."""

    lane: str
    step: int
    iteration: int
    start: float
    end: float
    label: str
    kind: str
    on: str


@dataclass(frozen=True)
class Timeline:
    """What `simulate` found. `ii`: cycles per iteration in the steady state (the slowest
    lane's); `lane_ii`: each lane's; `steady`: the window (cycles) `ii` and `utilisation`
    are measured over; `iteration_starts`: per lane, when it started each iteration (its
    earliest step start on it); `stalled`: per lane, the fraction of the steady window it
    spends waiting, by wait kind ("aref", "dep", "unit")."""

    lanes: tuple[Lane, ...]
    iterations: int
    runs: tuple[Run, ...]
    waits: tuple[Wait, ...]
    ii: float
    lane_ii: dict[str, float]
    steady: tuple[float, float]
    steady_iterations: tuple[int, int]
    utilisation: dict[str, float]
    iteration_starts: dict[str, tuple[float, ...]] = field(default_factory=dict)
    stalled: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def end(self) -> float:
        return max((r.unit_end for r in self.runs), default=0.0)

    def runs_of(self, lane: str) -> list[Run]:
        return [r for r in self.runs if r.lane == lane]

    def waits_of(self, lane: str) -> list[Wait]:
        return [w for w in self.waits if w.lane == lane]

    @property
    def reference_lane(self) -> str:
        """The lane whose iteration starts bound the steady window and mark iterations in
        the picture: the first consumer, else the first lane."""
        return _reference_lane(self.lanes)


def _reference_lane(lanes: tuple[Lane, ...]) -> str:
    return next((ln.name for ln in lanes if ln.role == "consumer" and ln.steps), lanes[0].name)


def _validate(lanes: tuple[Lane, ...]) -> dict[str, Lane]:
    by_name: dict[str, Lane] = {}
    for lane in lanes:
        if lane.name in by_name:
            raise ValueError(f"two lanes named {lane.name!r}")
        by_name[lane.name] = lane
    for lane in lanes:
        if not lane.steps:
            raise ValueError(f"lane {lane.name!r} has no steps")
        for k, s in enumerate(lane.steps):
            where = f"lane {lane.name!r} step {k} ({s.label!r})"
            if s.unit not in UNITS:
                raise ValueError(f"{where}: unknown unit {s.unit!r} (one of {', '.join(UNITS)})")
            if min(s.issue, s.occupancy, s.latency) < 0 or s.stage < 0:
                raise ValueError(f"{where}: negative cost or stage")
            for d in s.deps:
                target = by_name.get(d.lane or lane.name)
                if target is None:
                    raise ValueError(f"{where}: dep on unknown lane {d.lane!r}")
                if not 0 <= d.step < len(target.steps):
                    raise ValueError(f"{where}: dep on step {d.step} of {target.name!r}")
                if d.distance < 0:
                    raise ValueError(f"{where}: negative dep distance")
    return by_name


def _steady_window(iterations: int) -> tuple[int, int]:
    """First and last iteration of the steady window (the last half of the run)."""
    last = iterations - 1
    span = iterations // 2
    if span >= _PERIOD:
        span -= span % _PERIOD
    return last - max(span, 1), last


# ----------------------------------------------------------------------------------------
# The run


@dataclass(frozen=True)
class _Next:
    """The step a lane would start next: step `k` of `lane` on iteration `iteration` in
    trip `trip`, at `start`. `key` orders the candidates (start, when the lane wanted to
    start less its head start, lane order); `deps`: (ready, dep, awaited lane) per dep,
    the latest at `dep_ready`."""

    key: tuple[float, float, int]
    lane: Lane
    trip: int
    k: int
    iteration: int
    deps: list[tuple[float, Dep, str]]
    dep_ready: float

    @property
    def start(self) -> float:
        return self.key[0]


@dataclass
class _Machine:
    """The simulation's state: each lane's queue of (trip, step, iteration) in issue
    order and how far it got (`head`), when each lane and contended unit is next free,
    and the runs and waits so far (`done`: the runs by (lane, step, iteration))."""

    lanes: tuple[Lane, ...]
    by_name: dict[str, Lane]
    queues: dict[str, list[tuple[int, int, int]]]
    head: dict[str, int]
    lane_free: dict[str, float]
    unit_free: dict[str, float]
    done: dict[tuple[str, int, int], Run] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)

    @staticmethod
    def initial(lanes: tuple[Lane, ...], iterations: int, delays: Mapping[str, float]) -> _Machine:
        """Every lane at the start of its first trip, free from its delay (0 where not
        given), every unit free at time 0."""
        return _Machine(
            lanes=lanes,
            by_name=_validate(lanes),
            queues={lane.name: _queue(lane, iterations) for lane in lanes},
            head={ln.name: 0 for ln in lanes},
            lane_free={ln.name: float(delays.get(ln.name, 0.0)) for ln in lanes},
            unit_free={u: 0.0 for u in CONTENDED},
        )

    @property
    def total(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def pending(self, lane: Lane) -> tuple[int, int, int] | None:
        """The lane's next (trip, step, iteration); None when it has run everything."""
        q = self.queues[lane.name]
        return q[self.head[lane.name]] if self.head[lane.name] < len(q) else None


def _queue(lane: Lane, iterations: int) -> list[tuple[int, int, int]]:
    """The lane's (trip, step index, iteration) in issue order (the stage rule)."""
    stages = max((s.stage for s in lane.steps), default=0)
    return [
        (trip, k, trip - s.stage)
        for trip in range(iterations + stages)
        for k, s in enumerate(lane.steps)
        if 0 <= trip - s.stage < iterations
    ]


def _dep_times(m: _Machine, lane: Lane, step: Step, it: int) -> list[tuple[float, Dep, str]] | None:
    """[(ready, dep, awaited lane)] or None while an awaited step has not started."""
    out = []
    for d in step.deps:
        name = d.lane or lane.name
        j = it - d.distance
        if j < 0:
            out.append((0.0, d, name))
            continue
        run = m.done.get((name, d.step, j))
        if run is None:
            return None
        out.append((run.ready, d, name))
    return out


def _candidate(m: _Machine, order: int, lane: Lane) -> _Next | None:
    """When the lane's next step could start; None when it has none, or one it awaits
    has not started."""
    pending = m.pending(lane)
    if pending is None:
        return None
    trip, k, it = pending
    step = lane.steps[k]
    deps = _dep_times(m, lane, step, it)
    if deps is None:
        return None
    dep_ready = max((t for t, _, _ in deps), default=0.0)
    unit_ready = m.unit_free.get(step.unit, 0.0)
    wanted = max(m.lane_free[lane.name], dep_ready)
    start = max(wanted, unit_ready)
    rank = wanted + order * HEAD_START
    return _Next((start, rank, order), lane, trip, k, it, deps, dep_ready)


def _next(m: _Machine) -> _Next:
    """The step that starts next (the earliest; a tie as the module docstring says); a
    deadlock is an error naming what each lane waits for."""
    best = None
    for order, lane in enumerate(m.lanes):
        c = _candidate(m, order, lane)
        if c is not None and (best is None or c.key < best.key):
            best = c
    if best is None:
        raise ValueError("the lanes deadlock; waiting: " + "; ".join(_stuck(m)))
    return best


def _stuck(m: _Machine) -> list[str]:
    """What each unfinished lane waits to start."""
    stuck = []
    for lane in m.lanes:
        pending = m.pending(lane)
        if pending is not None:
            _, k, it = pending
            stuck.append(f"{lane.name}: {lane.steps[k].label!r} of iteration {it}")
    return stuck


def _record_waits(m: _Machine, n: _Next) -> None:
    """The lane's stalls before `n`: on its latest dep, then on the busy unit."""
    lane, k, it = n.lane, n.k, n.iteration
    step = lane.steps[k]
    free = m.lane_free[lane.name]
    if n.dep_ready > free and n.deps:
        _, d, name = max(n.deps, key=lambda x: x[0])
        awaited = m.by_name[name].steps[d.step].label
        label = d.label or f"{awaited} ready"
        kind = "aref" if _AREF_WAIT.search(label) else "dep"
        m.waits.append(Wait(lane.name, k, it, free, n.dep_ready, label, kind, f"{name}:{d.step}"))
    if n.start > max(free, n.dep_ready):
        since = max(free, n.dep_ready)
        m.waits.append(
            Wait(lane.name, k, it, since, n.start, f"{step.unit} busy", "unit", step.unit)
        )


def _issue(m: _Machine, n: _Next) -> None:
    """Run `n`: its lane and unit are busy, its result ready after its latency."""
    step = n.lane.steps[n.k]
    run = Run(
        lane=n.lane.name,
        step=n.k,
        label=step.label,
        unit=step.unit,
        iteration=n.iteration,
        trip=n.trip,
        start=n.start,
        issue_end=n.start + step.issue,
        unit_start=n.start,
        unit_end=n.start + step.occupancy,
        ready=n.start + step.latency,
    )
    if step.unit in m.unit_free:
        m.unit_free[step.unit] = run.unit_end
    m.lane_free[n.lane.name] = run.issue_end
    m.head[n.lane.name] += 1
    m.done[(n.lane.name, n.k, n.iteration)] = run
    m.runs.append(run)


# ----------------------------------------------------------------------------------------
# What the run shows


def _iteration_starts(
    lanes: tuple[Lane, ...], runs: list[Run], iterations: int
) -> dict[str, tuple[float, ...]]:
    """Per lane, when it started each iteration (its earliest step start on it)."""
    starts: dict[str, tuple[float, ...]] = {}
    for lane in lanes:
        first = [math.inf] * iterations
        for r in runs:
            if r.lane == lane.name:
                first[r.iteration] = min(first[r.iteration], r.start)
        starts[lane.name] = tuple(first)
    return starts


def _utilisation(runs: list[Run], t0: float, t1: float) -> dict[str, float]:
    """Each contended unit some step occupies: its busy share of [t0, t1]."""
    utilisation = {}
    for u in CONTENDED:
        busy = sum(
            max(0.0, min(r.unit_end, t1) - max(r.unit_start, t0))
            for r in runs
            if r.unit == u and r.unit_end > r.unit_start
        )
        if any(r.unit == u and r.unit_end > r.unit_start for r in runs):
            utilisation[u] = busy / (t1 - t0) if t1 > t0 else 0.0
    return utilisation


def _stalled(
    lanes: tuple[Lane, ...], waits: tuple[Wait, ...], t0: float, t1: float
) -> dict[str, dict[str, float]]:
    """Per lane, the share of [t0, t1] it spends waiting, by wait kind."""
    stalled: dict[str, dict[str, float]] = {}
    for lane in lanes:
        share = stalled.setdefault(lane.name, {})
        for w in waits:
            if w.lane == lane.name and t1 > t0:
                part = max(0.0, min(w.end, t1) - max(w.start, t0)) / (t1 - t0)
                share[w.kind] = share.get(w.kind, 0.0) + part
    return stalled


def _summary(m: _Machine, iterations: int) -> Timeline:
    """The timeline of a finished run: the II and utilisation over the steady window."""
    lanes, runs = m.lanes, m.runs
    starts = _iteration_starts(lanes, runs, iterations)
    lo, hi = _steady_window(iterations)
    lane_ii = {ln.name: (starts[ln.name][hi] - starts[ln.name][lo]) / (hi - lo) for ln in lanes}
    ref = _reference_lane(lanes)
    t0, t1 = starts[ref][lo], starts[ref][hi]
    kept = tuple(w for w in m.waits if w.end > w.start)
    return Timeline(
        lanes=lanes,
        iterations=iterations,
        runs=tuple(runs),
        waits=kept,
        ii=max(lane_ii.values()),
        lane_ii=lane_ii,
        steady=(t0, t1),
        steady_iterations=(lo, hi),
        utilisation=_utilisation(runs, t0, t1),
        iteration_starts=starts,
        stalled=_stalled(lanes, kept, t0, t1),
    )


def simulate(
    lanes: list[Lane] | tuple[Lane, ...],
    iterations: int = 24,
    delays: Mapping[str, float] | None = None,
) -> Timeline:
    """Run every lane's loop body `iterations` times (module docstring: the rules); a
    lane named in `delays` starts its first step no earlier than that many cycles (a
    warp group that enters the loop late: the phase it starts the steady state in)."""
    lanes = tuple(lanes)
    if not lanes:
        raise ValueError("no lanes to simulate")
    if iterations < 2:
        raise ValueError("simulate needs at least 2 iterations")
    delays = delays or {}
    unknown = sorted(set(delays) - {ln.name for ln in lanes})
    if unknown:
        raise ValueError(f"delays name no lane: {', '.join(unknown)}")
    m = _Machine.initial(lanes, iterations, delays)
    total = m.total
    while len(m.runs) < total:
        n = _next(m)
        _record_waits(m, n)
        _issue(m, n)
    return _summary(m, iterations)


__all__ = ["CONTENDED", "UNITS", "Dep", "Step", "Lane", "Run", "Wait", "Timeline", "simulate"]
