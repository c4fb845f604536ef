"""`tawac explain --timeline`: the steady-state picture of the main loops, drawn from the
schedule and the target model's costs (`tawac.schedule.model`, `tawac.schedule.simulate`,
`tawac.timeline`)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from tawac.explain import explain_module
from tawac.options import PipelineOptions
from tawac.parser import parse_file

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))
SVG = "{http://www.w3.org/2000/svg}"


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tawac.cli", "explain", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


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
    out = tmp_path / "t.svg"
    proc = _cli(str(path), "--timeline", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out).getroot()
    assert _lanes(root, "warp-group") and _lanes(root, "unit")
    assert any(b.get("class") == "bar" for b in root.iter(f"{SVG}rect"))


def test_png_without_cairosvg_is_one_line(tmp_path):
    out = tmp_path / "t.png"
    code = "import sys; sys.modules['cairosvg'] = None; from tawac.cli import main; main()"
    cmd = [sys.executable, "-c", code, "explain", str(REPO / "examples" / "gemm.mlir")]
    proc = subprocess.run([*cmd, "--timeline", str(out)], capture_output=True, text=True)
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
