"""The steady-state simulator (tawac/schedule/simulate.py) and the SVG Gantt chart
(tawac/tools/timeline.py): hand-computed initiation intervals, waits where the lanes stall, and a
picture that can be parsed."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET

import pytest

from tawac.schedule.simulate import Dep, Lane, Step, simulate
from tawac.tools.timeline import render_svg, write_png


def producer_consumer(depth: int) -> list[Lane]:
    """A producer puts (latency 100, TMA busy 10), the consumer computes 50 cycles then
    releases the slot; the put of iteration i waits for the release of i - depth."""
    put = Step("put", "tma", 10, 10, 100, (Dep("consumer", 1, depth, "empty aref0"),))
    compute = Step("compute", "fma", 50, 50, 50, (Dep("producer", 0, 0, "full aref0"),))
    release = Step("release", "sync", 0, 0, 0)
    return [
        Lane("producer", "producer", (put,)),
        Lane("consumer", "consumer", (compute, release)),
    ]


def test_ring_bound_initiation_interval():
    # One slot goes round: put (100) -> compute (50) -> release -> put, shared by `depth`
    # iterations in flight.
    assert simulate(producer_consumer(2), 24).ii == pytest.approx(75.0)
    assert simulate(producer_consumer(1), 24).ii == pytest.approx(150.0)
    assert simulate(producer_consumer(3), 24).ii == pytest.approx(50.0)  # compute-bound


def test_waits_on_arefs_are_recorded():
    tl = simulate(producer_consumer(1), 8)
    producer = tl.waits_of("producer")
    consumer = tl.waits_of("consumer")
    assert producer and all(w.kind == "aref" and w.label == "empty aref0" for w in producer)
    assert consumer and all(w.kind == "aref" and w.label == "full aref0" for w in consumer)
    # The consumer waits for the first put's 100 cycles of latency from time 0.
    first = consumer[0]
    assert (first.iteration, first.start, first.end) == (0, 0.0, 100.0)
    # Every iteration after the first: the put of i waits for the release of i - 1.
    assert [w.iteration for w in producer] == list(range(1, 8))


def test_resource_bound_initiation_interval():
    # Two consumers fed by one producer through a 2-deep ring share the tensor core.
    put = Step("put", "tma", 1, 1, 10, (Dep("consumer wg0", 1, 2), Dep("consumer wg1", 1, 2)))
    get = Step("get", "sync", 0, 0, 0, (Dep("producer", 0, 0),))
    mma = Step("mma", "tensor", 5, 60, 60, (Dep("", 0, 0),))
    lanes = [Lane("producer", "producer", (put,))]
    lanes += [Lane(f"consumer wg{i}", "consumer", (get, mma)) for i in range(2)]
    tl = simulate(lanes, 24)
    assert tl.ii == pytest.approx(120.0)
    assert tl.utilisation["tensor"] == pytest.approx(1.0)
    assert any(w.kind == "unit" and w.label == "tensor busy" for w in tl.waits)
    # One lane alone is bound by the unit's occupancy, not by its issue.
    alone = Lane("consumer wg0", "consumer", (Step("mma", "tensor", 5, 60, 60),))
    assert simulate([alone], 24).ii == pytest.approx(60.0)


def test_waiting_lanes_are_served_with_a_head_start_in_lane_order():
    """A unit that frees while two lanes wait goes to the first in lane order unless the
    other has waited `HEAD_START` cycles longer (a greedy-then-oldest warp scheduler)."""
    from tawac.schedule.simulate import HEAD_START

    assert HEAD_START == 64.0
    hold = Step("hold", "fma", 0, 100, 100)  # the pipe is busy until 100
    late = Step("late", "fma", 1, 50, 50)

    def first_served(delay: float) -> str:
        wait = Step("wait", "alu", delay, 0, delay)
        lanes = [
            Lane("producer", "producer", (hold,)),
            Lane("consumer wg0", "consumer", (wait, late)),  # asks at `delay`
            Lane("consumer wg1", "consumer", (late,)),  # asks at 0
        ]
        runs = [r for r in simulate(lanes, 2).runs if r.label == "late" and r.iteration == 0]
        return min(runs, key=lambda r: r.start).lane

    assert first_served(30.0) == "consumer wg0"  # wg1 waited 30 cycles longer: < 64
    assert first_served(80.0) == "consumer wg1"  # 80 > 64


def test_recurrence_bound_initiation_interval():
    acc = Step("acc", "fma", 10, 10, 80, (Dep("", 0, 1, "acc ready"),))
    tl = simulate([Lane("consumer wg0", "consumer", (acc,))], 24)
    assert tl.ii == pytest.approx(80.0)
    assert tl.utilisation["fma"] == pytest.approx(10 / 80)
    assert {w.kind for w in tl.waits} == {"dep"}


def test_stages_and_iterations():
    # Stage 1: the store works on the previous iteration (prologue and epilogue trips).
    load = Step("load", "fma", 10, 10, 30)
    store = Step("store", "fma", 10, 10, 10, (Dep("", 0, 0, "loaded"),), stage=1)
    tl = simulate([Lane("wg", "consumer", (load, store))], 6)
    runs = tl.runs_of("wg")
    assert sorted((r.step, r.iteration) for r in runs) == sorted(
        (k, j) for k in (0, 1) for j in range(6)
    )
    # In trip 1, the store of iteration 0 runs after the load of iteration 1.
    trip1 = [(r.label, r.iteration) for r in runs if r.trip == 1]
    assert trip1 == [("load", 1), ("store", 0)]
    # Overlapped, the 30-cycle latency is hidden: 20 cycles per iteration.
    assert tl.ii == pytest.approx(20.0)


def test_invalid_lanes():
    with pytest.raises(ValueError, match="deadlock"):
        a = Step("a", "alu", 1, 0, 1, (Dep("", 1),))
        b = Step("b", "alu", 1, 0, 1)
        simulate([Lane("wg", "consumer", (a, b))], 4)
    with pytest.raises(ValueError, match="unknown unit"):
        simulate([Lane("wg", "consumer", (Step("a", "gpu", 1, 1, 1),))], 4)
    with pytest.raises(ValueError, match="unknown lane"):
        simulate([Lane("wg", "consumer", (Step("a", "alu", 1, 1, 1, (Dep("x", 0),)),))], 4)


def test_a_delayed_lane_starts_late_and_the_delay_names_a_lane():
    """`delays` holds a lane back at the start (the phase two warp groups enter a loop
    at): its first step starts at the delay, the others at 0; naming no lane is an
    error."""
    work = Step("work", "alu", 10, 0, 10)  # never contended
    lanes = [Lane(f"consumer wg{i}", "consumer", (work,)) for i in (0, 1)]
    tl = simulate(lanes, 4, {"consumer wg0": 25.0})
    first = {ln: min(r.start for r in tl.runs_of(ln)) for ln in ("consumer wg0", "consumer wg1")}
    assert first == {"consumer wg0": 25.0, "consumer wg1": 0.0}
    assert simulate(lanes, 4).runs_of("consumer wg0")[0].start == 0.0
    with pytest.raises(ValueError, match="delays name no lane: wg9"):
        simulate(lanes, 4, {"wg9": 1.0})


def _toy_attention() -> list[Lane]:
    def consumer(name: str) -> Lane:
        return Lane(
            name,
            "consumer",
            (
                Step("get K", "sync", 0, 0, 0, (Dep("producer", 0, 0, "full aref1"),)),
                Step("S=QK^T", "tensor", 16, 512, 566, (Dep("", 0),)),
                Step("softmax", "mufu", 600, 512, 620, (Dep("", 1, 0, "S ready"),)),
                Step("O+=PV", "tensor", 16, 512, 566, (Dep("", 2), Dep("", 3, 1, "O ready"))),
                Step("rel K", "sync", 0, 0, 72, (Dep("", 1),)),
            ),
        )

    put = Step(
        "put K", "tma", 2, 958, 958, tuple(Dep(f"wg{i}", 4, 2, "empty aref1") for i in (0, 1))
    )
    return [Lane("producer", "producer", (put,)), consumer("wg0"), consumer("wg1")]


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    for el in root.iter():  # drop the namespace from tags
        el.tag = el.tag.split("}")[-1]
    return root


def test_svg_structure_of_a_whole_run():
    lanes = _toy_attention()
    tl = simulate(lanes, 8)
    root = _parse(render_svg(tl, title="toy", window=(0.0, tl.end)))
    groups = [g for g in root.iter("g") if g.get("class") == "lane"]
    wg = [g for g in groups if g.get("data-kind") == "warp-group"]
    units = [g for g in groups if g.get("data-kind") == "unit"]
    assert [g.get("data-lane") for g in wg] == ["producer", "wg0", "wg1"]
    assert [g.get("data-lane") for g in units] == ["tensor", "tma", "mufu"]
    for lane, g in zip(lanes, wg, strict=True):
        bars = [r for r in g.iter("rect") if r.get("class") == "bar"]
        assert len(bars) == len(lane.steps) * 8
        for j in range(8):
            mine = [b for b in bars if b.get("data-iter") == str(j)]
            assert sorted(int(b.get("data-step")) for b in mine) == list(range(len(lane.steps)))
    tensor = next(g for g in units if g.get("data-unit") == "tensor")
    busy = [r for r in tensor.iter("rect") if r.get("class") == "busy"]
    assert len(busy) == 2 * 2 * 8  # two dots per iteration per consumer
    # Every simulated stall is drawn, in its lane, with its label.
    drawn = {
        (r.get("data-lane"), r.get("data-iter"), r.get("data-label"))
        for r in root.iter("rect")
        if r.get("class") == "wait"
    }
    assert drawn == {(w.lane, str(w.iteration), w.label) for w in tl.waits}
    assert any(label == "empty aref1" for lane, _, label in drawn if lane == "producer")


def test_svg_default_window_labels_and_caption():
    tl = simulate(_toy_attention(), 16)
    svg = render_svg(tl, title="toy attention")
    root = _parse(svg)
    assert float(root.get("data-ii")) == pytest.approx(tl.ii)
    t0, t1 = (float(v) for v in root.get("data-window").split())
    assert t0 >= tl.iteration_starts["wg0"][tl.steady_iterations[0]] - tl.ii
    bars = [r for r in root.iter("rect") if r.get("class") == "bar"]
    assert bars and all(
        float(b.get("data-end")) >= t0 and float(b.get("data-start")) <= t1 for b in bars
    )
    # Labels inside bars read "label iteration", for an iteration drawn in the window.
    drawn_iters = {b.get("data-iter") for b in bars}
    labelled = [
        m
        for t in root.iter("text")
        if (m := re.fullmatch(r"(S=QK\^T|O\+=PV|softmax) (\d+)", t.text or ""))
    ]
    assert labelled and all(m.group(2) in drawn_iters for m in labelled)
    # Each bar has a tooltip naming its iteration.
    assert all(f"iteration {b.get('data-iter')}" in b.find("title").text for b in bars)
    caption = " ".join(t.text for t in root.iter("text") if t.get("class") == "caption")
    assert f"{tl.ii:,.0f} cycles/iteration" in caption and "tensor core" in caption
    waits = [r for r in root.iter("rect") if r.get("class") == "wait"]
    assert {w.get("data-kind") for w in waits} >= {"aref"}


def test_png_needs_cairosvg(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "cairosvg", None)
    svg = render_svg(simulate(producer_consumer(2), 8))
    with pytest.raises(RuntimeError, match="cairosvg"):
        write_png(svg, str(tmp_path / "x.png"))
