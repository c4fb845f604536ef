"""The SVG Gantt chart of a simulated steady state (`tawac.schedule.simulate.Timeline`).

`render_svg` draws one lane per warp group and one per contended unit: warp groups' bars
labelled with their iteration, stalls hatched by kind, asynchronous ops' in-flight lines,
units' busy bars shaded by the issuing warp group; above them the title, the caption (the
initiation interval, the units' utilisation, each lane's waiting share) and the
reference lane's iteration starts; below, the time axis and the legend. Each part is its
own function on one `_Chart` (the window, the scale and the vertical layout).
`write_png` renders the SVG to a PNG (optional `cairosvg`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from tawac.runtime.trace import Measured, MeasuredLane
from tawac.schedule.simulate import CONTENDED, UNITS, Lane, Run, Timeline, Wait

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
_TEXT_X = _LEFT - 160  # where the title, the caption and the legend start


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


# ----------------------------------------------------------------------------------------
# The layout


@dataclass(frozen=True)
class _Chart:
    """What every part of the picture reads: the timeline, the window [t0, t1] drawn over
    `plot_w` pixels from `_LEFT` (`scale` pixels per cycle), the units drawn, and the
    vertical layout: the top of each warp group's lane (`lane_y`) and each unit's
    (`unit_y`), the iteration labels' baseline, the units' heading, the time axis, the
    legend's first row and the whole height."""

    timeline: Timeline
    t0: float
    t1: float
    width: int
    plot_w: float
    scale: float
    units: list[str]
    lane_y: dict[str, float]
    unit_y: dict[str, float]
    y_marks: float
    y_units_label: float
    y_axis: float
    y_legend: float
    height: float
    measured_y: dict[str, float]
    y_measured_label: float
    offset: float  # the predicted cycle where the measured window's first iteration starts

    def x(self, t: float) -> float:
        """The horizontal position of cycle `t`."""
        return _LEFT + (t - self.t0) * self.scale

    def visible(self, a: float, b: float) -> bool:
        """Whether [a, b] meets the window."""
        return b >= self.t0 and a <= self.t1


def _layout(
    timeline: Timeline,
    t0: float,
    t1: float,
    width: int,
    measured: Measured | None = None,
    offset: float = 0.0,
) -> _Chart:
    """The chart of `timeline` over [t0, t1]: the title and caption at the top, the
    iteration labels, one lane per warp group, the measured heading and one lane per
    measured warp group (with `measured`, drawn from cycle `offset`), the units' heading
    and one lane per busy unit, then the time axis and the legend."""
    plot_w = width - _LEFT - _RIGHT
    units = [
        u
        for u in CONTENDED
        if any(r.unit == u and r.unit_end > r.unit_start for r in timeline.runs)
    ]
    y_marks = 120 if measured is None else 140  # a fourth caption line: the measurement
    y = y_marks + 12
    lane_y: dict[str, float] = {}
    for lane in timeline.lanes:
        lane_y[lane.name] = y
        y += _WG_H + _WG_GAP
    measured_y: dict[str, float] = {}
    y_measured_label = y + 6
    if measured is not None:
        y += 16
        for m in measured.lanes:
            measured_y[m.name] = y
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
    return _Chart(
        timeline=timeline,
        t0=t0,
        t1=t1,
        width=width,
        plot_w=plot_w,
        scale=plot_w / (t1 - t0),
        units=units,
        lane_y=lane_y,
        unit_y=unit_y,
        y_marks=y_marks,
        y_units_label=y_units_label,
        y_axis=y_axis,
        y_legend=y_legend,
        height=y_legend + (64 if measured is not None else 40),
        measured_y=measured_y,
        y_measured_label=y_measured_label,
        offset=offset,
    )


def _text(parent: ET.Element, x_, y_, s: str, size=12, anchor="start", **attrs) -> ET.Element:
    """A text element at (x_, y_)."""
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


def _tooltip(el: ET.Element, s: str) -> None:
    ET.SubElement(el, "title").text = s


def _line(parent: ET.Element, x1, x2, y1, y2, **attrs: str) -> None:
    """A line from (x1, y1) to (x2, y2), coordinates as given (already formatted)."""
    ET.SubElement(
        parent, "line", {"x1": f"{x1}", "x2": f"{x2}", "y1": f"{y1}", "y2": f"{y2}", **attrs}
    )


def _bar_text(
    parent: ET.Element,
    chart: _Chart,
    span: tuple[float, float],
    ytop: float,
    h: float,
    fill: str,
    candidates: list[str],
) -> None:
    """The first of `candidates` that fits the visible part of the bar over the cycles
    `span`, centred on it (none when none fits)."""
    a, b = span
    xa, xb = max(chart.x(a), _LEFT), min(chart.x(b), _LEFT + chart.plot_w)
    room = xb - xa - 6
    for c in candidates:
        if _text_w(c, _BAR_FONT) <= room:
            _text(
                parent,
                (xa + xb) / 2,
                ytop + h / 2 + _BAR_FONT * 0.36,
                c,
                _BAR_FONT,
                "middle",
                **{"fill": _ink(fill), "pointer-events": "none"},
            )
            return


# ----------------------------------------------------------------------------------------
# The parts


def _canvas(chart: _Chart) -> ET.Element:
    """The root element (its data: the II and the window), the wait hatches, the plot
    area's clip and the white background."""
    width, height = chart.width, chart.height
    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "width": str(width),
            "height": str(round(height)),
            "viewBox": f"0 0 {width} {round(height)}",
            "font-family": _FONT,
            "class": "tawac-timeline",
            "data-ii": f"{chart.timeline.ii:g}",
            "data-window": f"{chart.t0:g} {chart.t1:g}",
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
        clip,
        "rect",
        {"x": f"{_LEFT}", "y": "0", "width": f"{chart.plot_w}", "height": f"{height}"},
    )
    ET.SubElement(svg, "rect", {"width": "100%", "height": "100%", "fill": "#ffffff"})
    return svg


def _measured_caption(svg: ET.Element, m: Measured, ii: float) -> None:
    """The fourth caption line: where the measurement comes from and the model's error."""
    last = m.first_iteration + len(m.lanes[0].iteration_starts) - 1 if m.lanes else 0
    text = (
        f"Measured (trace): {_fmt(m.ii)} cycles/iteration, median of {m.iterations} "
        f"iterations of loop {m.loop} at {m.ghz:.2f} GHz; the model's error "
        f"{100 * (ii / m.ii - 1):+.0f}%. Below: SM {m.sm}, CTA {m.cta}, iterations "
        f"{m.first_iteration}-{last}, from the model's first iteration shown"
    )
    _text(svg, _TEXT_X, 114, text, 13.5, **{"fill": "#1d1d1f", "class": "caption"})


def _title(svg: ET.Element, chart: _Chart, title: str) -> None:
    """The title and three caption lines: the initiation interval (and the lanes whose
    own differs), the units' utilisation, each lane's share of waiting."""
    tl = chart.timeline
    _text(svg, _TEXT_X, 30, title, 19, **{"font-weight": "bold", "fill": "#1d1d1f"})
    y_caption = 54
    lo, hi = tl.steady_iterations
    cap = (
        f"Initiation interval {_fmt(tl.ii)} cycles/iteration "
        f"(steady state: iterations {lo}-{hi} of {tl.iterations})"
    )
    differing = {n: v for n, v in tl.lane_ii.items() if abs(v - tl.ii) > 0.5}
    if differing:
        cap += "; " + ", ".join(f"{n} {_fmt(v)}" for n, v in differing.items())
    _text(svg, _TEXT_X, y_caption, cap, 13.5, **{"fill": "#1d1d1f", "class": "caption"})
    util = "  ·  ".join(
        f"{UNIT_STYLE[u][1]} {100 * tl.utilisation.get(u, 0.0):.0f}%" for u in chart.units
    )
    caption = {"fill": "#3a3a3c", "class": "caption"}
    _text(svg, _TEXT_X, y_caption + 20, f"Unit utilisation: {util}", 13.5, **caption)
    waiting = "  ·  ".join(
        f"{name} {100 * sum(kinds.values()):.0f}%"
        + (f" ({100 * kinds['aref']:.0f}% on arefs)" if kinds.get("aref", 0) >= 0.005 else "")
        for name, kinds in tl.stalled.items()
    )
    _text(svg, _TEXT_X, y_caption + 40, f"Waiting: {waiting}", 13.5, **caption)


def _axes(svg: ET.Element, chart: _Chart) -> None:
    """The time axis under the lanes, a vertical grid line and a labelled tick at each
    round number of cycles, and the axis' unit."""
    grid = ET.SubElement(svg, "g", {"class": "grid"})
    t0, t1, y_axis = chart.t0, chart.t1, chart.y_axis
    step = _nice_step(t1 - t0, 12)
    tick = math.ceil(t0 / step) * step
    _line(grid, _LEFT, _LEFT + chart.plot_w, y_axis, y_axis, stroke="#6e6e73")
    while tick <= t1 + 1e-9:
        xt = f"{chart.x(tick):.1f}"
        grid_line = {"stroke": "#e3e3e8", "stroke-width": "1"}
        _line(grid, xt, xt, chart.y_marks + 8, y_axis, **grid_line)
        _line(grid, xt, xt, y_axis, y_axis + 5, stroke="#6e6e73")
        _text(grid, chart.x(tick), y_axis + 18, _fmt(tick), 11, "middle", **{"fill": "#3a3a3c"})
        tick += step
    right = _LEFT + chart.plot_w
    _text(grid, right, y_axis + 34, "cycles", 11.5, "end", **{"fill": "#3a3a3c"})


def _iteration_marks(svg: ET.Element, chart: _Chart) -> None:
    """A dashed line where the reference lane starts each iteration in the window,
    labelled above the lanes when the label fits."""
    ref = chart.timeline.reference_lane
    marks = ET.SubElement(svg, "g", {"class": "iterations", "data-lane": ref})
    dashed = {
        "stroke": "#1d1d1f",
        "stroke-width": "1",
        "stroke-dasharray": "4 3",
        "opacity": "0.55",
    }
    for j, s in enumerate(chart.timeline.iteration_starts[ref]):
        if not chart.t0 <= s <= chart.t1:
            continue
        xs = chart.x(s)
        label = f"iteration {j}"
        _line(marks, f"{xs:.1f}", f"{xs:.1f}", chart.y_marks + 4, chart.y_axis, **dashed)
        if xs + 4 + _text_w(label, 11.5) <= chart.width - 4:
            bold = {"fill": "#1d1d1f", "font-weight": "bold", "data-iter": str(j)}
            _text(marks, xs + 4, chart.y_marks, label, 11.5, **bold)


def _lane_labels(svg: ET.Element, chart: _Chart) -> None:
    """Left of the plot: each warp group's name, the units' heading, each unit's name and
    utilisation."""
    for lane in chart.timeline.lanes:
        ytop = chart.lane_y[lane.name]
        bold = {"fill": "#1d1d1f", "font-weight": "bold"}
        _text(svg, _LEFT - 12, ytop + _WG_H / 2 + 4.5, lane.name, 13, "end", **bold)
    italic = {"fill": "#6e6e73", "font-style": "italic"}
    if chart.measured_y:
        heading = "measured (trace)"
        _text(svg, _LEFT - 12, chart.y_measured_label + 4, heading, 11, "end", **italic)
        for name, ytop in chart.measured_y.items():
            bold = {"fill": "#1d1d1f", "font-weight": "bold"}
            _text(svg, _LEFT - 12, ytop + _WG_H / 2 + 4.5, name, 13, "end", **bold)
    _text(svg, _LEFT - 12, chart.y_units_label + 4, "units (per SM)", 11, "end", **italic)
    for u in chart.units:
        colour, name = UNIT_STYLE[u]
        pct = 100 * chart.timeline.utilisation.get(u, 0.0)
        label = f"{name} {pct:.0f}%"
        ytop = chart.unit_y[u] + _UNIT_H / 2 + 4
        _text(svg, _LEFT - 12, ytop, label, 12, "end", **{"fill": colour, "font-weight": "bold"})


def _lane_background(g: ET.Element, chart: _Chart, ytop: float, height: float) -> None:
    attrs = {"class": "lane-bg", "x": f"{_LEFT}", "y": f"{ytop}", "width": f"{chart.plot_w}"}
    ET.SubElement(g, "rect", {**attrs, "height": f"{height}", "fill": "#f5f5f7"})


def _warp_group_lane(plot: ET.Element, chart: _Chart, index: int, lane: Lane) -> None:
    """A warp group's lane: its background, its stalls, then the steps it issued."""
    ytop = chart.lane_y[lane.name]
    g = ET.SubElement(
        plot,
        "g",
        {
            "class": "lane",
            "data-lane": lane.name,
            "data-kind": "warp-group",
            "data-role": lane.role,
            "data-index": str(index),
        },
    )
    _lane_background(g, chart, ytop, _WG_H)
    for w in chart.timeline.waits_of(lane.name):
        if chart.visible(w.start, w.end):
            _wait(g, chart, lane, w, ytop)
    tracks: list[float] = []  # per in-flight line track: when its last line ends
    for r in chart.timeline.runs_of(lane.name):
        if not chart.visible(r.start, max(r.issue_end, r.ready)):
            continue
        if chart.visible(r.start, r.issue_end):
            _run(g, chart, r, ytop)
        if r.unit in ("tensor", "tma") and (r.ready - r.issue_end) * chart.scale >= 6:
            _in_flight(g, chart, r, ytop, tracks)


#: How a measured span is drawn: a unit's colour (what it issues) or a wait's hatch.
_MEASURED_STYLE = {
    "mma": ("tensor", None),
    "put": ("tma", None),
    "consumed": ("sync", None),
    "epilogue": ("alu", None),
    "get": (None, "aref"),
    "acquire": (None, "aref"),
    "mma.wait": (None, "dep"),
}
_MATH = ("fma", "between stamps (math)")


def _measured_lane(plot: ET.Element, chart: _Chart, lane: MeasuredLane) -> None:
    """A measured warp group's lane: its spans (waits hatched as the model's, the rest in
    their unit's colour), a consumer's time between spans (its math) in a light FMA
    colour, and a dashed tick where each of its iterations starts."""
    ytop = chart.measured_y[lane.name]
    g = ET.SubElement(
        plot,
        "g",
        {"class": "lane", "data-lane": lane.name, "data-kind": "measured", "data-role": lane.role},
    )
    _lane_background(g, chart, ytop, _WG_H)
    off = chart.offset
    if lane.role == "consumer":
        fill = _mix(UNIT_STYLE[_MATH[0]][0], 0.55)
        for a, b in _gaps(lane.spans, 0.0, max((sp.end for sp in lane.spans), default=0.0)):
            _measured_bar(g, chart, (off + a, off + b), ytop, (fill, fill), "math", "gap")
    for sp in lane.spans:
        unit, wait = _MEASURED_STYLE.get(sp.op, ("alu", None))
        fills = (f"url(#hatch-{wait})", "#f0f0f0") if wait else (UNIT_STYLE[unit][0],) * 2
        _measured_bar(g, chart, (off + sp.start, off + sp.end), ytop, fills, sp.name, sp.op)
    dashed = {"stroke": "#1d1d1f", "stroke-dasharray": "3 2"}
    for x in lane.iteration_starts:
        xs = f"{chart.x(off + x):.1f}"
        _line(g, xs, xs, ytop - 2, ytop + _WG_H - 4, **dashed)


def _gaps(spans, lo: float, hi: float) -> list[tuple[float, float]]:
    """The parts of [lo, hi] no span covers."""
    out = []
    at = lo
    for sp in sorted(spans, key=lambda sp: sp.start):
        if sp.start > at:
            out.append((at, min(sp.start, hi)))
        at = max(at, sp.end)
    if at < hi:
        out.append((at, hi))
    return [(a, b) for a, b in out if b > a]


def _measured_bar(
    g: ET.Element,
    chart: _Chart,
    span: tuple[float, float],
    ytop: float,
    fills: tuple[str, str],
    label: str,
    op: str,
) -> None:
    """A measured span over the cycles `span`: filled with `fills[0]`, its label on
    `fills[1]` when it fits, a tooltip with its length."""
    a, b = span
    if not chart.visible(a, b):
        return
    el = ET.SubElement(
        g,
        "rect",
        {
            "class": "measured",
            "x": f"{chart.x(a):.2f}",
            "y": f"{ytop + 2}",
            "width": f"{max((b - a) * chart.scale, 1.0):.2f}",
            "height": f"{_BAR_H}",
            "rx": "2",
            "fill": fills[0],
            "stroke": "#ffffff",
            "stroke-width": "0.6",
            "data-op": op,
            "data-label": label,
            "data-start": f"{a - chart.offset:g}",
            "data-end": f"{b - chart.offset:g}",
        },
    )
    _tooltip(el, f"{label}: {_fmt(b - a)} cycles (measured)")
    _bar_text(g, chart, (a, b), ytop + 2, _BAR_H, fills[1], [label, label.split()[-1]])


def _wait(g: ET.Element, chart: _Chart, lane: Lane, w: Wait, ytop: float) -> None:
    """A stall: a rect hatched by its kind, its label when it fits, a tooltip."""
    el = ET.SubElement(
        g,
        "rect",
        {
            "class": "wait",
            "x": f"{chart.x(w.start):.2f}",
            "y": f"{ytop + 2}",
            "width": f"{max((w.end - w.start) * chart.scale, 1.0):.2f}",
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
    _tooltip(
        el,
        f"{lane.name} waits {_fmt(w.end - w.start)} cycles: {w.label} "
        f"(before {lane.steps[w.step].label}, iteration {w.iteration})",
    )
    labels = [f"{w.label} {w.iteration}", w.label, w.label.split()[-1]]
    _bar_text(g, chart, (w.start, w.end), ytop + 2, _BAR_H, "#f0f0f0", labels)


def _run(g: ET.Element, chart: _Chart, r: Run, ytop: float) -> None:
    """A step a warp group issued: a bar in its unit's colour over the issue, labelled
    with the step and iteration when that fits, a tooltip with its times."""
    colour = UNIT_STYLE[r.unit][0]
    el = ET.SubElement(
        g,
        "rect",
        {
            "class": "bar",
            "x": f"{chart.x(r.start):.2f}",
            "y": f"{ytop + 2}",
            "width": f"{max((r.issue_end - r.start) * chart.scale, 3.0):.2f}",
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
    _tooltip(
        el,
        f"{r.label} (iteration {r.iteration}) on {UNIT_STYLE[r.unit][1]}: "
        f"issued {_fmt(r.start)}-{_fmt(r.issue_end)}, unit busy until "
        f"{_fmt(r.unit_end)}, ready at {_fmt(r.ready)}",
    )
    labels = [f"{r.label} {r.iteration}", f"{r.iteration}"]
    _bar_text(g, chart, (r.start, r.issue_end), ytop + 2, _BAR_H, colour, labels)


def _in_flight(g: ET.Element, chart: _Chart, r: Run, ytop: float, tracks: list[float]) -> None:
    """An asynchronous op's tail (issued, result not yet usable): a line under the bars
    ending in a tick at `ready`, on the first track free by then (at most three drawn
    apart)."""
    colour = UNIT_STYLE[r.unit][0]
    k = next((i for i, end in enumerate(tracks) if end <= r.issue_end), None)
    if k is None:
        k = len(tracks)
        tracks.append(r.ready)
    tracks[k] = r.ready
    yl = ytop + _BAR_H + 5 + 3.5 * min(k, 2)
    xa, xb = f"{chart.x(r.issue_end):.2f}", f"{chart.x(r.ready):.2f}"
    lat = ET.SubElement(
        g, "g", {"class": "latency", "data-step": str(r.step), "data-iter": str(r.iteration)}
    )
    _line(lat, xa, xb, yl, yl, **{"stroke": colour, "stroke-width": "1.6", "opacity": "0.8"})
    _line(lat, xb, xb, yl - 3, yl + 2, **{"stroke": colour, "stroke-width": "1.6"})
    _tooltip(lat, f"{r.label} {r.iteration}: result ready at {_fmt(r.ready)}")


def _shades(chart: _Chart) -> dict[tuple[str, str], int]:
    """Per (unit, lane) on it: 1 for the 2nd, 4th, ... lane using the unit (drawn
    lighter, so that the lanes on one unit tell apart), else 0."""
    runs = chart.timeline.runs
    return {
        (u, name): i % 2
        for u in chart.units
        for i, name in enumerate(
            dict.fromkeys(r.lane for r in runs if r.unit == u and r.unit_end > r.unit_start)
        )
    }


def _unit_lane(plot: ET.Element, chart: _Chart, u: str, shade: dict[tuple[str, str], int]) -> None:
    """A unit's lane: its background and a busy bar per step occupying it, shaded by the
    issuing lane and labelled with it when that fits."""
    ytop = chart.unit_y[u]
    colour, name = UNIT_STYLE[u]
    g = ET.SubElement(
        plot, "g", {"class": "lane", "data-lane": u, "data-kind": "unit", "data-unit": u}
    )
    _lane_background(g, chart, ytop, _UNIT_H)
    for r in chart.timeline.runs:
        if r.unit != u or r.unit_end <= r.unit_start:
            continue
        if not chart.visible(r.unit_start, r.unit_end):
            continue
        fill = _mix(colour, 0.4) if shade[(u, r.lane)] else colour
        el = ET.SubElement(
            g,
            "rect",
            {
                "class": "busy",
                "x": f"{chart.x(r.unit_start):.2f}",
                "y": f"{ytop + 2}",
                "width": f"{max((r.unit_end - r.unit_start) * chart.scale, 1.0):.2f}",
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
        _tooltip(
            el,
            f"{r.lane}: {r.label} (iteration {r.iteration}), {name} busy "
            f"{_fmt(r.unit_start)}-{_fmt(r.unit_end)}",
        )
        labels = [
            f"{_short(r.lane)}: {r.label} {r.iteration}",
            f"{r.label} {r.iteration}",
            f"{r.iteration}",
        ]
        _bar_text(g, chart, (r.unit_start, r.unit_end), ytop, _UNIT_H, fill, labels)


def _legend(svg: ET.Element, chart: _Chart) -> None:
    """Below the axis: a swatch per unit used and per wait kind seen; on a second row the
    in-flight marker and a note on how to read the chart."""
    tl = chart.timeline
    legend = ET.SubElement(svg, "g", {"class": "legend"})
    lx, y_legend = _TEXT_X, chart.y_legend
    used = [u for u in UNITS if any(r.unit == u for r in tl.runs)]
    items: list[tuple[str, str]] = [(UNIT_STYLE[u][0], UNIT_STYLE[u][1]) for u in used]
    kinds = [k for k in _WAIT_STYLE if any(w.kind == k for w in tl.waits)]
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
        _text(legend, lx + 28, y_legend, label, 12, **{"fill": "#1d1d1f"})
        lx += 28 + _text_w(label, 12) + 22
    # The async-op marker starts the second row (the first is full with wide titles).
    lx, y_legend = _TEXT_X, y_legend + 24
    tensor = {"stroke": UNIT_STYLE["tensor"][0], "stroke-width": "1.6"}
    _line(legend, lx, lx + 22, y_legend - 4, y_legend - 4, **tensor)
    _line(legend, lx + 22, lx + 22, y_legend - 8, y_legend - 2, **tensor)
    label = "async op in flight until its result is ready"
    _text(legend, lx + 28, y_legend, label, 12, **{"fill": "#1d1d1f"})
    lx += 28 + _text_w(label, 12) + 22
    if chart.measured_y:
        swatch = {"width": "22", "height": "14", "rx": "2", "stroke": "#6e6e73"}
        fill = _mix(UNIT_STYLE[_MATH[0]][0], 0.55)
        ET.SubElement(
            legend, "rect", {"x": f"{lx}", "y": f"{y_legend - 11}", "fill": fill, **swatch}
        )
        label = f"measured: {_MATH[1]}"
        _text(legend, lx + 28, y_legend, label, 12, **{"fill": "#1d1d1f"})
        lx += 28 + _text_w(label, 12) + 22
    if chart.measured_y:  # the note on a third row
        lx, y_legend = _TEXT_X, y_legend + 24
    note = (
        f"| Bars: what each warp group issues, labelled with the iteration; unit lanes: "
        f"how long each unit is busy (shades: which warp group). Dashed: {tl.reference_lane} "
        f"starts an iteration."
    )
    _text(legend, lx, y_legend, note, 11.5, **{"fill": "#6e6e73"})


def render_svg(
    timeline: Timeline,
    title: str = "Steady state of the main loop",
    window: tuple[float, float] | None = None,
    width: int = 1400,
    shown: int = 3,
    measured: Measured | None = None,
) -> str:
    """The timeline as an SVG Gantt chart (text). `window`: the cycles shown (default:
    `shown` steady-state iterations, `default_window`, widened to the measured ones).
    `measured`: a measured window (`tawac.runtime.trace.measured_window`) drawn under the
    warp groups' lanes on the same axis, its first iteration at the model's first shown
    one (`data-kind` "measured" lanes of `<rect class="measured">`, `data-op`).

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
    offset = 0.0
    if measured is not None:
        offset = _first_shown(timeline, t0, t1)
        if window is None:
            t1 = max(t1, offset + measured.span + 0.03 * (t1 - t0))
    chart = _layout(timeline, t0, t1, width, measured, offset)
    svg = _canvas(chart)
    _title(svg, chart, title)
    if measured is not None:
        _measured_caption(svg, measured, timeline.ii)
    _axes(svg, chart)
    _iteration_marks(svg, chart)
    plot = ET.SubElement(svg, "g", {"clip-path": "url(#plot-area)"})
    _lane_labels(svg, chart)
    for index, lane in enumerate(timeline.lanes):
        _warp_group_lane(plot, chart, index, lane)
    for m in measured.lanes if measured is not None else ():
        _measured_lane(plot, chart, m)
    shade = _shades(chart)
    for u in chart.units:
        _unit_lane(plot, chart, u, shade)
    _legend(svg, chart)
    ET.indent(svg)
    return ET.tostring(svg, encoding="unicode")


def _first_shown(timeline: Timeline, t0: float, t1: float) -> float:
    """The first iteration start of the reference lane in [t0, t1] (else t0)."""
    starts = timeline.iteration_starts[timeline.reference_lane]
    return next((x for x in starts if t0 <= x <= t1), t0)


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
