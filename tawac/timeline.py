"""A steady-state timeline of a warp-specialized loop: simulator and SVG Gantt chart.

Independent of the IR: a loop is a few `Lane`s (the producer, each consumer warp group),
each a list of `Step`s in issue order, with `Dep`s between steps (an aref's full and empty
barriers, a result awaited, a loop-carried value). `simulate` runs every lane's body for a
number of iterations on one SM's units and records what ran when and why a lane waited;
`render_svg` draws it: one lane per warp group, one per unit, bars labelled with their
iteration, waits hatched, the initiation interval and the units' utilisation in the caption.

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
- Among the lanes' next steps, the one that can start earliest goes first; on a tie, the
  one that has waited longest (then lane order): each unit serves its requests first come,
  first served, and two lanes sharing a unit take turns.
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
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

#: Units per SM that lanes contend for, in drawing order.
CONTENDED = ("tensor", "tma", "mufu", "fma", "shfl")
#: Every unit a step may name.
UNITS = (*CONTENDED, "sync", "alu")

_AREF_WAIT = re.compile(r"\b(full|empty)\b|aref", re.IGNORECASE)
_PERIOD = 12  # the steady window spans a multiple of this many iterations when it can


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


def simulate(lanes: list[Lane] | tuple[Lane, ...], iterations: int = 24) -> Timeline:
    """Run every lane's loop body `iterations` times (module docstring: the rules)."""
    lanes = tuple(lanes)
    if not lanes:
        raise ValueError("no lanes to simulate")
    if iterations < 2:
        raise ValueError("simulate needs at least 2 iterations")
    by_name = _validate(lanes)
    # Each lane's queue of (trip, step index, iteration), in issue order.
    queues: dict[str, list[tuple[int, int, int]]] = {}
    for lane in lanes:
        stages = max((s.stage for s in lane.steps), default=0)
        queues[lane.name] = [
            (trip, k, trip - s.stage)
            for trip in range(iterations + stages)
            for k, s in enumerate(lane.steps)
            if 0 <= trip - s.stage < iterations
        ]
    head = {ln.name: 0 for ln in lanes}
    lane_free = {ln.name: 0.0 for ln in lanes}
    unit_free = {u: 0.0 for u in CONTENDED}
    done: dict[tuple[str, int, int], Run] = {}
    runs: list[Run] = []
    waits: list[Wait] = []

    def dep_times(lane: Lane, step: Step, it: int):
        """[(ready, dep, awaited lane)] or None while an awaited step has not started."""
        out = []
        for d in step.deps:
            name = d.lane or lane.name
            j = it - d.distance
            if j < 0:
                out.append((0.0, d, name))
                continue
            run = done.get((name, d.step, j))
            if run is None:
                return None
            out.append((run.ready, d, name))
        return out

    total = sum(len(q) for q in queues.values())
    while len(runs) < total:
        best = None
        for order, lane in enumerate(lanes):
            q = queues[lane.name]
            if head[lane.name] >= len(q):
                continue
            trip, k, it = q[head[lane.name]]
            step = lane.steps[k]
            deps = dep_times(lane, step, it)
            if deps is None:
                continue
            dep_ready = max((t for t, _, _ in deps), default=0.0)
            unit_ready = unit_free.get(step.unit, 0.0)
            wanted = max(lane_free[lane.name], dep_ready)
            start = max(wanted, unit_ready)
            key = (start, wanted, order)
            if best is None or key < best[0]:
                best = (key, lane, trip, k, it, deps, dep_ready)
        if best is None:
            stuck = []
            for lane in lanes:
                q = queues[lane.name]
                if head[lane.name] < len(q):
                    _, k, it = q[head[lane.name]]
                    stuck.append(f"{lane.name}: {lane.steps[k].label!r} of iteration {it}")
            raise ValueError("the lanes deadlock; waiting: " + "; ".join(stuck))
        (start, _, _), lane, trip, k, it, deps, dep_ready = best
        step = lane.steps[k]
        free = lane_free[lane.name]
        if dep_ready > free and deps:
            t, d, name = max(deps, key=lambda x: x[0])
            awaited = by_name[name].steps[d.step].label
            label = d.label or f"{awaited} ready"
            kind = "aref" if _AREF_WAIT.search(label) else "dep"
            waits.append(Wait(lane.name, k, it, free, dep_ready, label, kind, f"{name}:{d.step}"))
        if start > max(free, dep_ready):
            waits.append(
                Wait(
                    lane.name,
                    k,
                    it,
                    max(free, dep_ready),
                    start,
                    f"{step.unit} busy",
                    "unit",
                    step.unit,
                )
            )
        run = Run(
            lane=lane.name,
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
        if step.unit in unit_free:
            unit_free[step.unit] = run.unit_end
        lane_free[lane.name] = run.issue_end
        head[lane.name] += 1
        done[(lane.name, k, it)] = run
        runs.append(run)

    starts: dict[str, tuple[float, ...]] = {}
    for lane in lanes:
        first = [math.inf] * iterations
        for r in runs:
            if r.lane == lane.name:
                first[r.iteration] = min(first[r.iteration], r.start)
        starts[lane.name] = tuple(first)
    lo, hi = _steady_window(iterations)
    lane_ii = {ln.name: (starts[ln.name][hi] - starts[ln.name][lo]) / (hi - lo) for ln in lanes}
    ii = max(lane_ii.values())
    ref = _reference_lane(lanes)
    t0, t1 = starts[ref][lo], starts[ref][hi]
    utilisation = {}
    for u in CONTENDED:
        busy = sum(
            max(0.0, min(r.unit_end, t1) - max(r.unit_start, t0))
            for r in runs
            if r.unit == u and r.unit_end > r.unit_start
        )
        if any(r.unit == u and r.unit_end > r.unit_start for r in runs):
            utilisation[u] = busy / (t1 - t0) if t1 > t0 else 0.0
    kept = tuple(w for w in waits if w.end > w.start)
    stalled: dict[str, dict[str, float]] = {}
    for lane in lanes:
        share = stalled.setdefault(lane.name, {})
        for w in kept:
            if w.lane == lane.name and t1 > t0:
                part = max(0.0, min(w.end, t1) - max(w.start, t0)) / (t1 - t0)
                share[w.kind] = share.get(w.kind, 0.0) + part
    return Timeline(
        lanes=lanes,
        iterations=iterations,
        runs=tuple(runs),
        waits=kept,
        ii=ii,
        lane_ii=lane_ii,
        steady=(t0, t1),
        steady_iterations=(lo, hi),
        utilisation=utilisation,
        iteration_starts=starts,
        stalled=stalled,
    )


# ----------------------------------------------------------------------------------------
# The picture

#: Fill colour and name of each unit in the picture.
UNIT_STYLE: dict[str, tuple[str, str]] = {
    "tensor": ("#3b6fb6", "tensor core"),
    "tma": ("#2e9a6b", "TMA"),
    "mufu": ("#c8453f", "MUFU"),
    "fma": ("#e08a2c", "FMA / ALU"),
    "shfl": ("#8462b8", "shuffle"),
    "sync": ("#6b5a4e", "mbarrier"),
    "alu": ("#9a9a9a", "scalar"),
}
_WAIT_STYLE = {  # kind: (background, stripes, legend text)
    "aref": ("#fbe4e2", "#d0453f", "wait on an aref barrier"),
    "dep": ("#ececec", "#9a9a9a", "wait for a result"),
    "unit": ("#fff3d1", "#c9a227", "wait for a busy unit"),
}
_FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
_CHAR_W = 0.6  # average glyph width / font size (DejaVu Sans)
_LEFT, _RIGHT = 178, 28
_WG_H, _WG_GAP, _UNIT_H, _UNIT_GAP = 40, 9, 26, 7
_BAR_H = 28  # bars in a warp group's lane; the rest below holds the in-flight lines
_BAR_FONT = 11


def _fmt(t: float) -> str:
    return f"{t:,.0f}" if abs(t - round(t)) < 1e-9 or abs(t) >= 100 else f"{t:,.1f}"


def _text_w(text: str, size: float) -> float:
    return len(text) * _CHAR_W * size


def _mix(colour: str, white: float) -> str:
    """`colour` mixed with `white` parts of white (0: unchanged)."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    r, g, b = (round(c + (255 - c) * white) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def _ink(fill: str) -> str:
    r, g, b = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#ffffff" if 0.299 * r + 0.587 * g + 0.114 * b < 150 else "#1d1d1f"


def _nice_step(span: float, target: int) -> float:
    raw = max(span / target, 1e-9)
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _short(lane: str) -> str:
    """A lane's tag on a unit's bars: "consumer wg1" -> "wg1", "producer" -> "prod"."""
    last = lane.split()[-1] if lane.split() else lane
    return "prod" if lane.startswith("producer") else last


def _lane_background(g: ET.Element, ytop: float, width: float, height: float) -> None:
    attrs = {"class": "lane-bg", "x": f"{_LEFT}", "y": f"{ytop}", "width": f"{width}"}
    ET.SubElement(g, "rect", {**attrs, "height": f"{height}", "fill": "#f5f5f7"})


def default_window(timeline: Timeline, shown: int = 3) -> tuple[float, float]:
    """`shown` iterations of the steady state, as the reference lane starts them, with a
    small margin either side."""
    starts = timeline.iteration_starts[timeline.reference_lane]
    lo, hi = timeline.steady_iterations
    first = max(lo, hi - shown)
    t0 = starts[first]
    t1 = starts[first + shown] if first + shown <= hi else t0 + shown * timeline.ii
    if t1 <= t0:
        t1 = t0 + max(timeline.ii, 1.0) * shown
    pad = 0.03 * (t1 - t0)
    return t0 - pad, t1 + pad


def render_svg(
    timeline: Timeline,
    title: str = "Steady state of the main loop",
    window: tuple[float, float] | None = None,
    width: int = 1400,
    shown: int = 3,
) -> str:
    """The timeline as an SVG Gantt chart (text). `window`: the cycles shown (default:
    `shown` steady-state iterations, `default_window`).

    Machine-readable structure: one `<g class="lane">` per lane, `data-kind` "warp-group"
    (`data-lane`, `data-role`) or "unit" (`data-lane` = the unit); in a warp group's lane
    `<rect class="bar">` per step it issued and `<rect class="wait">` per stall, in a unit's
    `<rect class="busy">` per step on it (`data-from`: the issuing lane). Bars carry
    `data-lane`, `data-unit`, `data-step`, `data-iter`, `data-label`, `data-start`,
    `data-end`; waits `data-kind` ("aref", "dep", "unit") and `data-label` as well.
    """
    t0, t1 = window if window is not None else default_window(timeline, shown)
    if t1 <= t0:
        raise ValueError(f"empty window ({t0}, {t1})")
    plot_w = width - _LEFT - _RIGHT
    scale = plot_w / (t1 - t0)

    def x(t: float) -> float:
        return _LEFT + (t - t0) * scale

    def visible(a: float, b: float) -> bool:
        return b >= t0 and a <= t1

    lanes = timeline.lanes
    units = [
        u
        for u in CONTENDED
        if any(r.unit == u and r.unit_end > r.unit_start for r in timeline.runs)
    ]
    ref = timeline.reference_lane
    starts = timeline.iteration_starts[ref]

    # Vertical layout.
    y_title, y_caption = 30, 54
    y_marks = 120
    y = y_marks + 12
    lane_y: dict[str, float] = {}
    for lane in lanes:
        lane_y[lane.name] = y
        y += _WG_H + _WG_GAP
    y_units_label = y + 6
    y += 16
    unit_y: dict[str, float] = {}
    for u in units:
        unit_y[u] = y
        y += _UNIT_H + _UNIT_GAP
    y_plot_end = y - _UNIT_GAP + 4
    y_axis = y_plot_end + 4
    y_legend = y_axis + 46
    height = y_legend + 40

    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "width": str(width),
            "height": str(round(height)),
            "viewBox": f"0 0 {width} {round(height)}",
            "font-family": _FONT,
            "class": "tawac-timeline",
            "data-ii": f"{timeline.ii:g}",
            "data-window": f"{t0:g} {t1:g}",
        },
    )
    defs = ET.SubElement(svg, "defs")
    for kind, (bg, fg, _) in _WAIT_STYLE.items():
        pat = ET.SubElement(
            defs,
            "pattern",
            {
                "id": f"hatch-{kind}",
                "patternUnits": "userSpaceOnUse",
                "width": "7",
                "height": "7",
                "patternTransform": "rotate(45)",
            },
        )
        ET.SubElement(pat, "rect", {"width": "7", "height": "7", "fill": bg})
        ET.SubElement(
            pat,
            "line",
            {"x1": "0", "y1": "0", "x2": "0", "y2": "7", "stroke": fg, "stroke-width": "2.2"},
        )
    clip = ET.SubElement(defs, "clipPath", {"id": "plot-area"})
    ET.SubElement(
        clip, "rect", {"x": f"{_LEFT}", "y": "0", "width": f"{plot_w}", "height": f"{height}"}
    )
    ET.SubElement(svg, "rect", {"width": "100%", "height": "100%", "fill": "#ffffff"})

    def text(parent, x_, y_, s, size=12, anchor="start", **attrs):
        el = ET.SubElement(
            parent,
            "text",
            {
                "x": f"{x_:.1f}",
                "y": f"{y_:.1f}",
                "font-size": f"{size}",
                "text-anchor": anchor,
                **attrs,
            },
        )
        el.text = s
        return el

    # Title and caption.
    text(svg, _LEFT - 160, y_title, title, 19, **{"font-weight": "bold", "fill": "#1d1d1f"})
    lo, hi = timeline.steady_iterations
    cap = (
        f"Initiation interval {_fmt(timeline.ii)} cycles/iteration "
        f"(steady state: iterations {lo}-{hi} of {timeline.iterations})"
    )
    differing = {n: v for n, v in timeline.lane_ii.items() if abs(v - timeline.ii) > 0.5}
    if differing:
        cap += "; " + ", ".join(f"{n} {_fmt(v)}" for n, v in differing.items())
    text(svg, _LEFT - 160, y_caption, cap, 13.5, **{"fill": "#1d1d1f", "class": "caption"})
    util = "  ·  ".join(
        f"{UNIT_STYLE[u][1]} {100 * timeline.utilisation.get(u, 0.0):.0f}%" for u in units
    )
    text(
        svg,
        _LEFT - 160,
        y_caption + 20,
        f"Unit utilisation: {util}",
        13.5,
        **{"fill": "#3a3a3c", "class": "caption"},
    )

    waiting = "  ·  ".join(
        f"{name} {100 * sum(kinds.values()):.0f}%"
        + (f" ({100 * kinds['aref']:.0f}% on arefs)" if kinds.get("aref", 0) >= 0.005 else "")
        for name, kinds in timeline.stalled.items()
    )
    text(
        svg,
        _LEFT - 160,
        y_caption + 40,
        f"Waiting: {waiting}",
        13.5,
        **{"fill": "#3a3a3c", "class": "caption"},
    )

    # Grid and time axis.
    grid = ET.SubElement(svg, "g", {"class": "grid"})
    step = _nice_step(t1 - t0, 12)
    tick = math.ceil(t0 / step) * step
    ET.SubElement(
        grid,
        "line",
        {
            "x1": f"{_LEFT}",
            "x2": f"{_LEFT + plot_w}",
            "y1": f"{y_axis}",
            "y2": f"{y_axis}",
            "stroke": "#6e6e73",
        },
    )
    while tick <= t1 + 1e-9:
        xt = x(tick)
        ET.SubElement(
            grid,
            "line",
            {
                "x1": f"{xt:.1f}",
                "x2": f"{xt:.1f}",
                "y1": f"{y_marks + 8}",
                "y2": f"{y_axis}",
                "stroke": "#e3e3e8",
                "stroke-width": "1",
            },
        )
        ET.SubElement(
            grid,
            "line",
            {
                "x1": f"{xt:.1f}",
                "x2": f"{xt:.1f}",
                "y1": f"{y_axis}",
                "y2": f"{y_axis + 5}",
                "stroke": "#6e6e73",
            },
        )
        text(grid, xt, y_axis + 18, _fmt(tick), 11, "middle", **{"fill": "#3a3a3c"})
        tick += step
    text(grid, _LEFT + plot_w, y_axis + 34, "cycles", 11.5, "end", **{"fill": "#3a3a3c"})

    # Iteration starts of the reference lane.
    marks = ET.SubElement(svg, "g", {"class": "iterations", "data-lane": ref})
    for j, s in enumerate(starts):
        if t0 <= s <= t1:
            xs = x(s)
            label = f"iteration {j}"
            ET.SubElement(
                marks,
                "line",
                {
                    "x1": f"{xs:.1f}",
                    "x2": f"{xs:.1f}",
                    "y1": f"{y_marks + 4}",
                    "y2": f"{y_axis}",
                    "stroke": "#1d1d1f",
                    "stroke-width": "1",
                    "stroke-dasharray": "4 3",
                    "opacity": "0.55",
                },
            )
            if xs + 4 + _text_w(label, 11.5) <= width - 4:
                text(
                    marks,
                    xs + 4,
                    y_marks,
                    label,
                    11.5,
                    **{"fill": "#1d1d1f", "font-weight": "bold", "data-iter": str(j)},
                )

    plot = ET.SubElement(svg, "g", {"clip-path": "url(#plot-area)"})

    def bar_text(
        parent, a: float, b: float, ytop: float, h: float, fill: str, candidates: list[str]
    ) -> None:
        xa, xb = max(x(a), _LEFT), min(x(b), _LEFT + plot_w)
        room = xb - xa - 6
        for c in candidates:
            if _text_w(c, _BAR_FONT) <= room:
                text(
                    parent,
                    (xa + xb) / 2,
                    ytop + h / 2 + _BAR_FONT * 0.36,
                    c,
                    _BAR_FONT,
                    "middle",
                    **{"fill": _ink(fill), "pointer-events": "none"},
                )
                return

    def tooltip(el, s: str) -> None:
        ET.SubElement(el, "title").text = s

    # Warp-group lanes.
    for li, lane in enumerate(lanes):
        ytop = lane_y[lane.name]
        text(
            svg,
            _LEFT - 12,
            ytop + _WG_H / 2 + 4.5,
            lane.name,
            13,
            "end",
            **{"fill": "#1d1d1f", "font-weight": "bold"},
        )
        g = ET.SubElement(
            plot,
            "g",
            {
                "class": "lane",
                "data-lane": lane.name,
                "data-kind": "warp-group",
                "data-role": lane.role,
                "data-index": str(li),
            },
        )
        _lane_background(g, ytop, plot_w, _WG_H)
        for w in timeline.waits_of(lane.name):
            if not visible(w.start, w.end):
                continue
            el = ET.SubElement(
                g,
                "rect",
                {
                    "class": "wait",
                    "x": f"{x(w.start):.2f}",
                    "y": f"{ytop + 2}",
                    "width": f"{max((w.end - w.start) * scale, 1.0):.2f}",
                    "height": f"{_BAR_H}",
                    "fill": f"url(#hatch-{w.kind})",
                    "stroke": _WAIT_STYLE[w.kind][1],
                    "stroke-width": "0.8",
                    "data-lane": w.lane,
                    "data-step": str(w.step),
                    "data-iter": str(w.iteration),
                    "data-kind": w.kind,
                    "data-label": w.label,
                    "data-on": w.on,
                    "data-start": f"{w.start:g}",
                    "data-end": f"{w.end:g}",
                },
            )
            tooltip(
                el,
                f"{lane.name} waits {_fmt(w.end - w.start)} cycles: {w.label} "
                f"(before {lane.steps[w.step].label}, iteration {w.iteration})",
            )
            bar_text(
                g,
                w.start,
                w.end,
                ytop + 2,
                _BAR_H,
                "#f0f0f0",
                [f"{w.label} {w.iteration}", w.label, w.label.split()[-1]],
            )
        tracks: list[float] = []
        for r in timeline.runs_of(lane.name):
            if not visible(r.start, max(r.issue_end, r.ready)):
                continue
            colour = UNIT_STYLE[r.unit][0]
            if visible(r.start, r.issue_end):
                wpx = max((r.issue_end - r.start) * scale, 3.0)
                el = ET.SubElement(
                    g,
                    "rect",
                    {
                        "class": "bar",
                        "x": f"{x(r.start):.2f}",
                        "y": f"{ytop + 2}",
                        "width": f"{wpx:.2f}",
                        "height": f"{_BAR_H}",
                        "rx": "2",
                        "fill": colour,
                        "stroke": "#ffffff",
                        "stroke-width": "0.6",
                        "data-lane": r.lane,
                        "data-unit": r.unit,
                        "data-step": str(r.step),
                        "data-iter": str(r.iteration),
                        "data-label": r.label,
                        "data-start": f"{r.start:g}",
                        "data-end": f"{r.issue_end:g}",
                        "data-ready": f"{r.ready:g}",
                    },
                )
                tooltip(
                    el,
                    f"{r.label} (iteration {r.iteration}) on {UNIT_STYLE[r.unit][1]}: "
                    f"issued {_fmt(r.start)}-{_fmt(r.issue_end)}, unit busy until "
                    f"{_fmt(r.unit_end)}, ready at {_fmt(r.ready)}",
                )
                bar_text(
                    g,
                    r.start,
                    r.issue_end,
                    ytop + 2,
                    _BAR_H,
                    colour,
                    [f"{r.label} {r.iteration}", f"{r.iteration}"],
                )
            # The async tail: issued, result not yet usable.
            if r.unit in ("tensor", "tma") and (r.ready - r.issue_end) * scale >= 6:
                k = next((i for i, end in enumerate(tracks) if end <= r.issue_end), None)
                if k is None:
                    k = len(tracks)
                    tracks.append(r.ready)
                tracks[k] = r.ready
                yl = ytop + _BAR_H + 5 + 3.5 * min(k, 2)
                xa, xb = x(r.issue_end), x(r.ready)
                lat = ET.SubElement(
                    g,
                    "g",
                    {"class": "latency", "data-step": str(r.step), "data-iter": str(r.iteration)},
                )
                ET.SubElement(
                    lat,
                    "line",
                    {
                        "x1": f"{xa:.2f}",
                        "x2": f"{xb:.2f}",
                        "y1": f"{yl}",
                        "y2": f"{yl}",
                        "stroke": colour,
                        "stroke-width": "1.6",
                        "opacity": "0.8",
                    },
                )
                ET.SubElement(
                    lat,
                    "line",
                    {
                        "x1": f"{xb:.2f}",
                        "x2": f"{xb:.2f}",
                        "y1": f"{yl - 3}",
                        "y2": f"{yl + 2}",
                        "stroke": colour,
                        "stroke-width": "1.6",
                    },
                )
                tooltip(lat, f"{r.label} {r.iteration}: result ready at {_fmt(r.ready)}")

    # Unit lanes.
    text(
        svg,
        _LEFT - 12,
        y_units_label + 4,
        "units (per SM)",
        11,
        "end",
        **{"fill": "#6e6e73", "font-style": "italic"},
    )
    # Shades tell the lanes on one unit apart: the 2nd, 4th, ... lane using it is lighter.
    shade = {
        (u, name): i % 2
        for u in units
        for i, name in enumerate(
            dict.fromkeys(
                r.lane for r in timeline.runs if r.unit == u and r.unit_end > r.unit_start
            )
        )
    }
    for u in units:
        ytop = unit_y[u]
        colour, name = UNIT_STYLE[u]
        pct = 100 * timeline.utilisation.get(u, 0.0)
        text(
            svg,
            _LEFT - 12,
            ytop + _UNIT_H / 2 + 4,
            f"{name} {pct:.0f}%",
            12,
            "end",
            **{"fill": colour, "font-weight": "bold"},
        )
        g = ET.SubElement(
            plot, "g", {"class": "lane", "data-lane": u, "data-kind": "unit", "data-unit": u}
        )
        _lane_background(g, ytop, plot_w, _UNIT_H)
        for r in timeline.runs:
            if r.unit != u or r.unit_end <= r.unit_start or not visible(r.unit_start, r.unit_end):
                continue
            fill = _mix(colour, 0.4) if shade[(u, r.lane)] else colour
            el = ET.SubElement(
                g,
                "rect",
                {
                    "class": "busy",
                    "x": f"{x(r.unit_start):.2f}",
                    "y": f"{ytop + 2}",
                    "width": f"{max((r.unit_end - r.unit_start) * scale, 1.0):.2f}",
                    "height": f"{_UNIT_H - 4}",
                    "rx": "2",
                    "fill": fill,
                    "stroke": "#ffffff",
                    "stroke-width": "0.8",
                    "data-from": r.lane,
                    "data-unit": u,
                    "data-step": str(r.step),
                    "data-iter": str(r.iteration),
                    "data-label": r.label,
                    "data-start": f"{r.unit_start:g}",
                    "data-end": f"{r.unit_end:g}",
                },
            )
            tooltip(
                el,
                f"{r.lane}: {r.label} (iteration {r.iteration}), {name} busy "
                f"{_fmt(r.unit_start)}-{_fmt(r.unit_end)}",
            )
            bar_text(
                g,
                r.unit_start,
                r.unit_end,
                ytop,
                _UNIT_H,
                fill,
                [
                    f"{_short(r.lane)}: {r.label} {r.iteration}",
                    f"{r.label} {r.iteration}",
                    f"{r.iteration}",
                ],
            )

    # Legend.
    legend = ET.SubElement(svg, "g", {"class": "legend"})
    lx = _LEFT - 160
    used = [u for u in UNITS if any(r.unit == u for r in timeline.runs)]
    items: list[tuple[str, str]] = [(UNIT_STYLE[u][0], UNIT_STYLE[u][1]) for u in used]
    kinds = [k for k in _WAIT_STYLE if any(w.kind == k for w in timeline.waits)]
    items += [(f"url(#hatch-{k})", _WAIT_STYLE[k][2]) for k in kinds]
    for fill, label in items:
        ET.SubElement(
            legend,
            "rect",
            {
                "x": f"{lx}",
                "y": f"{y_legend - 11}",
                "width": "22",
                "height": "14",
                "rx": "2",
                "fill": fill,
                "stroke": "#6e6e73",
                "stroke-width": "0.5",
            },
        )
        text(legend, lx + 28, y_legend, label, 12, **{"fill": "#1d1d1f"})
        lx += 28 + _text_w(label, 12) + 22
    # The async-op marker starts the second row (the first is full with wide titles).
    lx, y_legend = _LEFT - 160, y_legend + 24
    ET.SubElement(
        legend,
        "line",
        {
            "x1": f"{lx}",
            "x2": f"{lx + 22}",
            "y1": f"{y_legend - 4}",
            "y2": f"{y_legend - 4}",
            "stroke": UNIT_STYLE["tensor"][0],
            "stroke-width": "1.6",
        },
    )
    ET.SubElement(
        legend,
        "line",
        {
            "x1": f"{lx + 22}",
            "x2": f"{lx + 22}",
            "y1": f"{y_legend - 8}",
            "y2": f"{y_legend - 2}",
            "stroke": UNIT_STYLE["tensor"][0],
            "stroke-width": "1.6",
        },
    )
    label = "async op in flight until its result is ready"
    text(legend, lx + 28, y_legend, label, 12, **{"fill": "#1d1d1f"})
    lx += 28 + _text_w(label, 12) + 22
    note = (
        f"| Bars: what each warp group issues, labelled with the iteration; unit lanes: "
        f"how long each unit is busy (shades: which warp group). Dashed: {ref} starts an "
        f"iteration."
    )
    text(legend, lx, y_legend, note, 11.5, **{"fill": "#6e6e73"})
    ET.indent(svg)
    return ET.tostring(svg, encoding="unicode")


def write_png(svg: str, path: str, scale: float = 1.0) -> None:
    """Render `svg` (from `render_svg`) to a PNG file; needs the optional `cairosvg`
    (`pip install cairosvg`, or the project's `timeline` extra)."""
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError as err:
        raise RuntimeError(
            "PNG output needs cairosvg, which is not installed: pip install cairosvg "
            "(or `pip install tawac[timeline]`); the SVG needs nothing"
        ) from err
    cairosvg.svg2png(bytestring=svg.encode(), write_to=path, scale=scale)
