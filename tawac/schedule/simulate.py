"""The timeline simulator: a steady-state run of a warp-specialized loop on one SM.

Independent of the IR: a loop is a few `Lane`s (the producer, each consumer warp group),
each a list of `Step`s in issue order, with `Dep`s between steps (an aref's full and empty
barriers, a result awaited, a loop-carried value); a step's costs are those of the cost
model (`tawac.schedule.cost.OpCost`), and `tawac.schedule.model.loop_lanes` builds the
lanes of a kernel's main loops. `simulate` runs every lane's body for a number of
iterations on one SM's units and records what ran when and why a lane waited (a
`Timeline`); the solver planner arbitrates with it and `tawac.tools.timeline.render_svg` draws it.
`steady_ii` is the same run's II alone (the cost model's price), without that record.

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

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

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


class _Pending(NamedTuple):
    """A lane's next step whose awaited steps have all started: step `k` on `iteration`
    in trip `trip`, on `unit`; `deps`: (ready, dep, awaited lane) per dep, the latest at
    `dep_ready`."""

    trip: int
    k: int
    iteration: int
    unit: str
    deps: list[tuple[float, Dep, str]]
    dep_ready: float


@dataclass
class _Machine:
    """The simulation's state: each lane's queue of (trip, step, iteration) in issue
    order and how far it got (`head`), when each lane and contended unit is next free,
    when each started step's result is ready (`ready`, by (lane, step, iteration)), the
    runs so far as (lane, step, iteration, trip, start) and the waits (when recorded).
    `resolved`: per lane, its next step once every step it awaits has started (a started
    step's times never change), until the lane moves on; `blocked`: per lane, the step
    (lane, step, iteration) it found not started yet (`_FINISHED` when it has run
    everything)."""

    lanes: tuple[Lane, ...]
    by_name: dict[str, Lane]
    queues: dict[str, list[tuple[int, int, int]]]
    head: dict[str, int]
    lane_free: dict[str, float]
    unit_free: dict[str, float]
    ready: dict[tuple[str, int, int], float] = field(default_factory=dict)
    runs: list[tuple[str, int, int, int, float]] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    resolved: dict[str, _Pending] = field(default_factory=dict)
    blocked: dict[str, tuple[str, int, int]] = field(default_factory=dict)

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


#: `_Machine.blocked` of a lane that has run everything (no step is ever ready under it).
_FINISHED = ("", -1, -1)


def _resolve(m: _Machine, lane: Lane) -> _Pending | None:
    """The lane's next step with its deps' ready times (deps on iterations below 0 are
    ready at 0); None when it has none, or a step it awaits has not started."""
    head = m.head[lane.name]
    q = m.queues[lane.name]
    if head >= len(q):
        m.blocked[lane.name] = _FINISHED
        return None
    trip, k, it = q[head]
    step = lane.steps[k]
    deps = []
    for d in step.deps:
        name = d.lane or lane.name
        j = it - d.distance
        if j < 0:
            deps.append((0.0, d, name))
            continue
        awaited = (name, d.step, j)
        ready = m.ready.get(awaited)
        if ready is None:
            m.blocked[lane.name] = awaited
            return None
        deps.append((ready, d, name))
    dep_ready = max((t for t, _, _ in deps), default=0.0)
    found = _Pending(trip, k, it, step.unit, deps, dep_ready)
    m.resolved[lane.name] = found
    return found


def _next(m: _Machine) -> tuple[float, Lane, _Pending]:
    """The step that starts next, with its start: the earliest; on a tie, the lane that
    wanted to start first less its head start, then lane order (module docstring). A
    deadlock is an error naming what each lane waits for."""
    best: tuple[tuple[float, float, int], Lane, _Pending] | None = None
    for order, lane in enumerate(m.lanes):
        p = m.resolved.get(lane.name)
        if p is None:
            awaited = m.blocked.get(lane.name)
            if awaited is not None and awaited not in m.ready:
                continue  # what it awaits has not started since it looked
            p = _resolve(m, lane)
            if p is None:
                continue
        wanted = max(m.lane_free[lane.name], p.dep_ready)
        start = max(wanted, m.unit_free.get(p.unit, 0.0))
        key = (start, wanted + order * HEAD_START, order)
        if best is None or key < best[0]:
            best = (key, lane, p)
    if best is None:
        raise ValueError("the lanes deadlock; waiting: " + "; ".join(_stuck(m)))
    return best[0][0], best[1], best[2]


def _stuck(m: _Machine) -> list[str]:
    """What each unfinished lane waits to start."""
    stuck = []
    for lane in m.lanes:
        pending = m.pending(lane)
        if pending is not None:
            _, k, it = pending
            stuck.append(f"{lane.name}: {lane.steps[k].label!r} of iteration {it}")
    return stuck


@functools.lru_cache(maxsize=4096)
def _wait_kind(label: str) -> str:
    """The kind of a wait labelled `label`: "aref" on a full or empty barrier or an
    aref, else "dep"."""
    return "aref" if _AREF_WAIT.search(label) else "dep"


def _record_waits(m: _Machine, lane: Lane, p: _Pending, start: float) -> None:
    """The lane's stalls before it starts `p` at `start`: on its latest dep, then on the
    busy unit."""
    k, it = p.k, p.iteration
    free = m.lane_free[lane.name]
    if p.dep_ready > free and p.deps:
        _, d, name = max(p.deps, key=lambda x: x[0])
        awaited = m.by_name[name].steps[d.step].label
        label = d.label or f"{awaited} ready"
        kind = _wait_kind(label)
        m.waits.append(Wait(lane.name, k, it, free, p.dep_ready, label, kind, f"{name}:{d.step}"))
    if start > max(free, p.dep_ready):
        since = max(free, p.dep_ready)
        m.waits.append(Wait(lane.name, k, it, since, start, f"{p.unit} busy", "unit", p.unit))


def _issue(m: _Machine, lane: Lane, p: _Pending, start: float) -> None:
    """Start `p` at `start`: its lane and unit are busy, its result ready after its
    latency."""
    step = lane.steps[p.k]
    name = lane.name
    if p.unit in m.unit_free:
        m.unit_free[p.unit] = start + step.occupancy
    m.lane_free[name] = start + step.issue
    m.head[name] += 1
    m.ready[(name, p.k, p.iteration)] = start + step.latency
    m.runs.append((name, p.k, p.iteration, p.trip, start))
    del m.resolved[name]


def _run(
    lanes: list[Lane] | tuple[Lane, ...],
    iterations: int,
    delays: Mapping[str, float] | None,
    record: bool,
) -> _Machine:
    """Run every lane's loop body `iterations` times (module docstring: the rules);
    `record`: also the waits."""
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
    for _ in range(m.total):
        start, lane, p = _next(m)
        if record:
            _record_waits(m, lane, p, start)
        _issue(m, lane, p, start)
    return m


# ----------------------------------------------------------------------------------------
# What the run shows


def _runs(m: _Machine) -> list[Run]:
    """The machine's runs as `Run`s."""
    out = []
    for name, k, it, trip, start in m.runs:
        step = m.by_name[name].steps[k]
        out.append(
            Run(
                lane=name,
                step=k,
                label=step.label,
                unit=step.unit,
                iteration=it,
                trip=trip,
                start=start,
                issue_end=start + step.issue,
                unit_start=start,
                unit_end=start + step.occupancy,
                ready=start + step.latency,
            )
        )
    return out


def _iteration_starts(m: _Machine, iterations: int) -> dict[str, tuple[float, ...]]:
    """Per lane, when it started each iteration (its earliest step start on it)."""
    first = {lane.name: [math.inf] * iterations for lane in m.lanes}
    for name, _, it, _, start in m.runs:
        starts = first[name]
        starts[it] = min(starts[it], start)
    return {name: tuple(starts) for name, starts in first.items()}


def _lane_iis(
    m: _Machine, iterations: int
) -> tuple[dict[str, tuple[float, ...]], dict[str, float]]:
    """Per lane its iteration starts and its interval over the steady window."""
    starts = _iteration_starts(m, iterations)
    lo, hi = _steady_window(iterations)
    lane_ii = {ln.name: (starts[ln.name][hi] - starts[ln.name][lo]) / (hi - lo) for ln in m.lanes}
    return starts, lane_ii


def _utilisation(runs: list[Run], t0: float, t1: float) -> dict[str, float]:
    """Each contended unit some step occupies: its busy share of [t0, t1]."""
    on: dict[str, list[Run]] = {u: [] for u in CONTENDED}
    for r in runs:
        if r.unit in on and r.unit_end > r.unit_start:
            on[r.unit].append(r)
    utilisation = {}
    for u in CONTENDED:
        busy = sum(max(0.0, min(r.unit_end, t1) - max(r.unit_start, t0)) for r in on[u])
        if on[u]:
            utilisation[u] = busy / (t1 - t0) if t1 > t0 else 0.0
    return utilisation


def _stalled(
    lanes: tuple[Lane, ...], waits: tuple[Wait, ...], t0: float, t1: float
) -> dict[str, dict[str, float]]:
    """Per lane, the share of [t0, t1] it spends waiting, by wait kind."""
    stalled: dict[str, dict[str, float]] = {lane.name: {} for lane in lanes}
    if t1 <= t0:
        return stalled
    for w in waits:
        share = stalled.get(w.lane)
        if share is None:
            continue
        part = max(0.0, min(w.end, t1) - max(w.start, t0)) / (t1 - t0)
        share[w.kind] = share.get(w.kind, 0.0) + part
    return stalled


def _summary(m: _Machine, iterations: int) -> Timeline:
    """The timeline of a finished run: the II and utilisation over the steady window."""
    lanes = m.lanes
    runs = _runs(m)
    starts, lane_ii = _lane_iis(m, iterations)
    lo, hi = _steady_window(iterations)
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
    return _summary(_run(lanes, iterations, delays, record=True), iterations)


def steady_ii(
    lanes: list[Lane] | tuple[Lane, ...],
    iterations: int = 24,
    delays: Mapping[str, float] | None = None,
) -> float:
    """`simulate(lanes, iterations, delays).ii`, without recording what the picture
    needs (the waits, the runs as `Run`s, the utilisation)."""
    _, lane_ii = _lane_iis(_run(lanes, iterations, delays, record=False), iterations)
    return max(lane_ii.values())


__all__ = [
    "CONTENDED",
    "UNITS",
    "Dep",
    "Step",
    "Lane",
    "Run",
    "Wait",
    "Timeline",
    "simulate",
    "steady_ii",
]
