"""`tawac explain --timeline`: the steady-state picture of the main loops, drawn from the
schedule and the target model's costs (`tawac.schedule.model`, `tawac.schedule.simulate`,
`tawac.tools.timeline`)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from cli_inprocess import tawac

from tawac.ir.parser import parse_file
from tawac.support.options import PipelineOptions
from tawac.tools.explain import explain_module

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))
SVG = "{http://www.w3.org/2000/svg}"


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`tawac explain args...`, run in this process."""
    return tawac(["explain", *args])


def _svg(example: str, out: Path) -> ET.Element:
    proc = _cli(str(REPO / "examples" / example), "--timeline", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "cycles per iteration" in proc.stdout
    return ET.parse(out).getroot()


def _lanes(root: ET.Element, kind: str) -> list[ET.Element]:
    return [
        g for g in root.iter(f"{SVG}g") if g.get("class") == "lane" and g.get("data-kind") == kind
    ]


def _info(example: str) -> dict:
    return explain_module(parse_file(REPO / "examples" / example), PipelineOptions(), True)


def _scheduled(info: dict, role: str) -> int:
    return len(next(lp for lp in info["loops"] if (lp["role"], lp["loop"]) == (role, 0))["ops"])


def _parts(info: dict, role: str) -> int:
    lane = next(ln for ln in info["timeline"]["lanes"] if ln["role"] == role)
    return len(lane["steps"])


@pytest.mark.parametrize("example", ["gemm.mlir", "attention.mlir"])
def test_lanes_bars_and_waits(example, tmp_path):
    root = _svg(example, tmp_path / "out.svg")
    info = _info(example)
    wgs = {r["role"]: r["warp_groups"] for r in info["roles"]}
    groups = _lanes(root, "warp-group")
    assert [g.get("data-lane") for g in groups] == ["producer"] + [
        f"consumer wg{i}" for i in range(wgs["consumer"])
    ]
    used = {
        s["unit"]
        for ln in info["timeline"]["lanes"]
        for s in ln["steps"]
        if s["occupancy"] > 0 and s["unit"] not in ("sync", "alu")
    }
    assert {g.get("data-lane") for g in _lanes(root, "unit")} == used
    assert "tensor" in used and "tma" in used
    # Every step of a lane's body appears once per iteration: count the bars of an
    # iteration that the picture shows whole (every step of it drawn, in one lane).
    for g in groups:
        role = g.get("data-role")
        steps = _parts(info, role)
        assert steps >= _scheduled(info, role)
        per_iter = Counter(
            b.get("data-iter") for b in g.iter(f"{SVG}rect") if b.get("class") == "bar"
        )
        steps_seen = {}
        for b in g.iter(f"{SVG}rect"):
            if b.get("class") == "bar":
                steps_seen.setdefault(b.get("data-iter"), set()).add(b.get("data-step"))
        whole = [it for it, seen in steps_seen.items() if len(seen) == steps]
        assert whole, (g.get("data-lane"), per_iter)
        assert all(per_iter[it] == steps for it in whole)
        # Labels carry the iteration number.
        for b in g.iter(f"{SVG}rect"):
            if b.get("class") == "bar":
                assert b.find(f"{SVG}title").text.startswith(
                    f"{b.get('data-label')} (iteration {b.get('data-iter')})"
                )
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any(t.endswith(tuple(f" {i}" for i in range(24))) and "%" in t for t in texts)
    waits = [w for w in root.iter(f"{SVG}rect") if w.get("class") == "wait"]
    aref_waits = {w.get("data-label").split()[0] for w in waits if w.get("data-kind") == "aref"}
    assert "full" in aref_waits or "empty" in aref_waits
    title = next(t.text for t in root.iter(f"{SVG}text"))
    assert info["kernel"] in title and "heuristic" in title and "II" in title


def test_attention_overlaps_stages(tmp_path):
    """The deferred P V dot (stage 1) of iteration i-1 runs in the trip where the
    softmax (stage 0) works on iteration i: the overlap the coarse pipeline creates."""
    root = _svg("attention.mlir", tmp_path / "out.svg")
    info = _info("attention.mlir")
    lane = next(ln for ln in info["timeline"]["lanes"] if ln["name"] == "consumer wg0")
    dots = [k for k, s in enumerate(lane["steps"]) if s["label"].endswith(" dot")]
    stages = {lane["steps"][k]["stage"] for k in dots}
    assert stages == {0, 1}
    pv = next(k for k in dots if lane["steps"][k]["stage"] == 1)
    exp2 = next(k for k, s in enumerate(lane["steps"]) if s["label"] == "%p exp2")
    assert lane["steps"][exp2]["stage"] == 0
    wg0 = next(g for g in _lanes(root, "warp-group") if g.get("data-lane") == "consumer wg0")
    bars = [b for b in wg0.iter(f"{SVG}rect") if b.get("class") == "bar"]
    assert bars
    seen = False
    for b in bars:
        if int(b.get("data-step")) != pv:
            continue
        j = int(b.get("data-iter"))
        # The softmax exp2 issued after this PV dot, before the next one, is on j + 1.
        later = [
            e
            for e in bars
            if int(e.get("data-step")) == exp2
            and float(e.get("data-start")) > float(b.get("data-start"))
        ]
        if later:
            first = min(later, key=lambda e: float(e.get("data-start")))
            assert int(first.get("data-iter")) == j + 1
            seen = True
    assert seen
    # The tensor core runs a PV dot while MUFU runs the next iteration's exponentials.
    busy = [b for b in root.iter(f"{SVG}rect") if b.get("class") == "busy"]
    pvs = [b for b in busy if b.get("data-unit") == "tensor" and b.get("data-step") == str(pv)]
    exps = [b for b in busy if b.get("data-unit") == "mufu" and b.get("data-label") == "%p exp2"]

    def overlap(a, b):
        return min(float(a.get("data-end")), float(b.get("data-end"))) > max(
            float(a.get("data-start")), float(b.get("data-start"))
        )

    assert any(
        overlap(d, e) and int(e.get("data-iter")) == int(d.get("data-iter")) + 1
        for d in pvs
        for e in exps
    )


def test_timeline_deps_follow_the_plan():
    info = _info("gemm.mlir")
    depth = info["arefs"][0]["depth"]
    lag = info["arefs"][0]["release_lag"]
    producer = next(ln for ln in info["timeline"]["lanes"] if ln["role"] == "producer")
    put = next(s for s in producer["steps"] if s["label"].startswith("put"))
    empty = [d for d in put["deps"] if d["label"].startswith("empty")]
    assert {d["lane"] for d in empty} == {"consumer wg0", "consumer wg1"}
    assert {d["distance"] for d in empty} == {depth - lag}
    wg0 = next(ln for ln in info["timeline"]["lanes"] if ln["name"] == "consumer wg0")
    get = next(s for s in wg0["steps"] if s["label"].startswith("get"))
    assert [d["label"] for d in get["deps"]] == ["full a_b"]
    assert info["timeline"]["ii"] > 0 and 0 < info["timeline"]["utilisation"]["tensor"] <= 1
    # Without the flag the data has no timeline (the golden files stay as they are).
    plain = explain_module(parse_file(REPO / "examples" / "gemm.mlir"), PipelineOptions())
    assert "timeline" not in plain
    # A lag moves the release: distance depth - lag.
    other = explain_module(
        parse_file(REPO / "examples" / "gemm.mlir"),
        PipelineOptions(stages=3, mma_depth=1),
        timeline=True,
    )
    assert other["arefs"][0]["release_lag"] == 1
    producer = next(ln for ln in other["timeline"]["lanes"] if ln["role"] == "producer")
    put = next(s for s in producer["steps"] if s["label"].startswith("put"))
    assert {d["distance"] for d in put["deps"] if d["label"].startswith("empty")} == {2}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_draws(path, tmp_path):
    """Every example with a main loop draws its timeline; one without (a kernel of one
    tile per program: the attention backward's preprocessing) is one located error."""
    out = tmp_path / "t.svg"
    proc = _cli(str(path), "--timeline", str(out), "--json")
    if "scf.for" not in path.read_text():
        assert proc.returncode == 1 and not out.exists()
        (line,) = proc.stderr.strip().splitlines()
        assert line.endswith("error: the consumer has no main loop to draw"), line
        assert line.startswith(f"{path}:"), line
        return
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out).getroot()
    assert _lanes(root, "warp-group") and _lanes(root, "unit")
    assert any(b.get("class") == "bar" for b in root.iter(f"{SVG}rect"))


def test_png_without_cairosvg_is_one_line(tmp_path, monkeypatch):
    out = tmp_path / "t.png"
    monkeypatch.setitem(sys.modules, "cairosvg", None)  # `import cairosvg` fails
    proc = _cli(str(REPO / "examples" / "gemm.mlir"), "--timeline", str(out))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cairosvg" in lines[0] and "Traceback" not in proc.stderr
    assert not out.exists()


def test_png_with_cairosvg(tmp_path):
    pytest.importorskip("cairosvg")
    out = tmp_path / "t.png"
    proc = _cli(str(REPO / "examples" / "gemm.mlir"), "--timeline", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- measured next to predicted ---------------------------------------------------


def _measured_trace(kernel: str = "gemm", iterations: int = 6, ii_ns: float = 500.0) -> dict:
    """A Chrome trace as `tawac run --trace-out` writes it: SM 7, a producer and a
    consumer track of CTA 3, one run of `iterations` iterations of loop 1 (`ii_ns` each,
    at 2 GHz: get 100 ns, mma 20 ns, mma.wait 200 ns), a put per iteration; iteration
    spans of another loop (0) and of another SM too."""
    ev: list[dict] = [
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "wg 0 producer"}},
        {"name": "thread_name", "ph": "M", "pid": 7, "tid": 1, "args": {"name": "wg 1 consumer"}},
        {"name": "thread_name", "ph": "M", "pid": 9, "tid": 1, "args": {"name": "wg 1 consumer"}},
    ]
    for tid in (0, 1):
        ev.append({"name": "warp group", "cat": "sync", "ph": "X", "ts": 0.0, "dur": 100.0,
                   "pid": 7, "tid": tid, "args": {"cta": 3, "ghz": 2.0}})  # fmt: skip

    def span(name, cat, pid, tid, t_ns, dur_ns, it, loop=1):
        cycles = round(dur_ns * 2)
        args = {"cta": 3, "loop": loop, "iteration": it, "cycles": cycles}
        ev.append({"name": name, "cat": cat, "ph": "X", "ts": t_ns / 1000, "dur": dur_ns / 1000,
                   "pid": pid, "tid": tid, "args": args})  # fmt: skip

    span("iteration loop0", "iteration", 7, 1, 0.0, 50.0, 0, loop=0)
    for i in range(iterations):
        t = 1000.0 + i * ii_ns
        span("iteration loop1", "iteration", 7, 1, t, ii_ns - 10, i)
        span("get a_b", "get", 7, 1, t + 10, 100, i)
        span("mma d", "mma", 7, 1, t + 120, 20, i)
        span("mma.wait", "mma.wait", 7, 1, t + 150, 200, i)
        span("put a_b", "put", 7, 0, t + 30, 40, i)
    span("iteration loop1", "iteration", 9, 1, 0.0, 2 * ii_ns, 0)
    ev.sort(key=lambda e: (e["pid"], e["tid"], e.get("ts", 0.0)))
    return {"traceEvents": ev, "displayTimeUnit": "ns", "otherData": {"kernel": kernel}}


def test_measured_window_of_a_trace():
    from tawac.runtime.trace import measured_window

    m = measured_window(_measured_trace())
    assert (m.sm, m.cta, m.loop, m.ghz) == (7, 3, 1, 2.0)
    # median over every consumer track's iterations of loop 1 (SM 9's one is longer)
    assert m.ii == 980 and m.iterations == 7
    # from the run's second iteration (the first fills the rings), three shown
    assert m.first_iteration == 1
    producer, consumer = m.lanes
    assert (producer.role, consumer.role) == ("producer", "consumer")
    assert consumer.iteration_starts == (0.0, 1000.0, 2000.0)
    first = [(s.op, s.start, s.end) for s in consumer.spans][:3]
    assert first == [("get", 20.0, 220.0), ("mma", 240.0, 280.0), ("mma.wait", 300.0, 700.0)]
    assert [s.op for s in producer.spans] == ["put"] * 3


def test_explain_draws_the_measured_window(tmp_path):
    trace = tmp_path / "gemm.trace.json"
    trace.write_text(json.dumps(_measured_trace()))
    out = tmp_path / "t.svg"
    proc = _cli(str(REPO / "examples/gemm.mlir"), "--timeline", str(out), "--measured",
                str(trace), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    m = info["measured"]
    assert (m["sm"], m["ii"], m["iterations"]) == (7, 980, 7)
    assert m["error"] == pytest.approx(info["timeline"]["ii"] / 980 - 1)
    root = ET.parse(out).getroot()
    lanes = _lanes(root, "measured")
    assert [g.get("data-lane") for g in lanes] == ["wg 0 producer", "wg 1 consumer"]
    ops = Counter(r.get("data-op") for r in lanes[1].iter(f"{SVG}rect") if r.get("class"))
    assert ops["mma"] == 3 and ops["get"] == 3 and ops["mma.wait"] == 3 and ops["gap"] >= 3
    captions = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "caption"]
    assert any(c.startswith("Measured (trace): 980 cycles/iteration") for c in captions)
    text = _cli(str(REPO / "examples/gemm.mlir"), "--measured", str(trace))
    assert text.returncode == 0 and "measured: 980 cycles per iteration" in text.stdout


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_measured_trace(kernel="attention"), "a trace of kernel @attention, not of @gemm"),
        ({"traceEvents": []}, "no iteration spans"),
        (_measured_trace(iterations=3), "no run of 4 consecutive iterations"),
        ("not json", "not a readable trace"),
    ],
)
def test_measured_trace_errors_are_one_line(tmp_path, doc, message):
    trace = tmp_path / "t.json"
    trace.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    out = tmp_path / "t.svg"
    proc = _cli(str(REPO / "examples/gemm.mlir"), "--timeline", str(out), "--measured", str(trace))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
    assert not out.exists()


def test_the_timeline_is_priced_at_the_sizes_given():
    """`tawac explain --size` prices the steady state at those sizes: the grouped GEMM's
    expert weights, read through the routing table, are shared by the 64 row blocks of
    8 experts (L2, tensor-bound); without sizes nothing shows them shared, and the model
    streams them from DRAM."""
    from click.testing import CliRunner

    from tawac.tools.cli import main

    src = REPO / "examples/gemm_grouped.mlir"
    sizes = {"T": 8192, "N": 4096, "K": 4096, "E": 8, "BLOCKS": 64}
    at = explain_module(parse_file(src), PipelineOptions(), timeline=True, sizes=sizes)
    blind = explain_module(parse_file(src), PipelineOptions(), timeline=True)
    assert at["timeline"]["utilisation"]["tensor"] > 0.95
    assert blind["timeline"]["ii"] > 2 * at["timeline"]["ii"]
    res = CliRunner().invoke(
        main,
        [
            "explain",
            str(src),
            "--size",
            "T=8192,N=4096,K=4096,E=8,BLOCKS=64",
            "--json",
            "--timeline",
            "/dev/null",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["timeline"]["ii"] == pytest.approx(at["timeline"]["ii"])
