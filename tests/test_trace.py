"""Instrumented builds (`--trace`, issue 20 item 1): the sidecar's "trace" entry and
trailing parameter, ptxas's report of the instrumented examples, the decoder to Chrome
trace JSON on synthetic buffers, the launcher's checks, and (GPU) a traced GEMM."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpu_util import requires_gpu

from tawac import cli
from tawac.driver import compile_file
from tawac.runtime.launcher import LaunchError, trace_bytes, validate_sidecar
from tawac.trace import RECORD, chrome_trace, records, write_chrome_trace

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
INSTRUMENTED = ["gemm.mlir", "attention.mlir", "gemm_bias.mlir", "attention_causal.mlir"]


@pytest.fixture(scope="module")
def traced():
    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = compile_file(EXAMPLES / name, cubin=True, trace=True)
        return cache[name]

    return get


@pytest.mark.parametrize("name", INSTRUMENTED)
def test_instrumented_example_assembles_cleanly(name, traced):
    res = traced(name)
    report = res.ptxas_report
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "0 bytes stack frame" in report, report
    assert "warning" not in report.lower() and "C75" not in report, report
    side = res.sidecar
    validate_sidecar(side)
    assert side["params"][-1] == {"kind": "trace"}
    assert [p["kind"] for p in side["params"]].count("trace") == 1
    t = side["trace"]
    assert t["record_bytes"] == 16 and t["slots"] == 4096 and t["ctas"] == 132
    assert t["warp_groups"] * 128 == side["block"][0]
    assert len(t["roles"]) == t["warp_groups"] and t["roles"][0] == "producer"
    # every event id is stamped somewhere, each span has a begin and an end
    ids = [e["id"] for e in t["events"]]
    assert ids == list(range(len(ids)))
    spans: dict[int, list[str]] = {}
    for e in t["events"]:
        spans.setdefault(e["span"], []).append(e["edge"])
    assert all(sorted(v) == ["begin", "end"] for v in spans.values())
    ops = {e["op"] for e in t["events"]}
    assert {"iteration", "acquire", "put", "get", "mma", "mma.wait", "consumed"} <= ops
    assert "epilogue" in ops
    # the leader's predicated 16-byte stores, one per stamp site
    assert res.ptx.count("%globaltimer;") == len(ids)
    assert res.ptx.count("st.global.v2.b64") == len(ids)
    assert re.search(r"\.param \.u64 tawac_trace\s*\)", res.ptx)


@pytest.mark.parametrize("name", ["gemm.mlir", "attention.mlir"])
def test_uninstrumented_build_has_no_trace(name):
    res = compile_file(EXAMPLES / name, cubin=False)
    assert "trace" not in res.sidecar
    assert all(p["kind"] != "trace" for p in res.sidecar["params"])
    assert "globaltimer" not in res.ptx and "tawac_trace" not in res.ptx


# --- the decoder on synthetic buffers ----------------------------------------------------

EVENTS = [
    {"id": 0, "name": "iteration loop0", "op": "iteration", "span": 0, "loop": 0, "edge": "begin"},
    {"id": 1, "name": "iteration loop0", "op": "iteration", "span": 0, "loop": 0, "edge": "end"},
    {"id": 2, "name": "get a_b", "op": "get", "span": 1, "loop": 0, "edge": "begin"},
    {"id": 3, "name": "get a_b", "op": "get", "span": 1, "loop": 0, "edge": "end"},
    {"id": 4, "name": "mma d", "op": "mma", "span": 2, "loop": 0, "edge": "begin"},
    {"id": 5, "name": "mma d", "op": "mma", "span": 2, "loop": 0, "edge": "end"},
]
for e in EVENTS:
    e["role"] = "consumer"


def _table(slots=8, ctas=2, wgs=2):
    return {
        "slots": slots,
        "ctas": ctas,
        "warp_groups": wgs,
        "record_bytes": 16,
        "roles": ["producer", "consumer"][:wgs],
        "events": EVENTS,
    }


def _buffer(table, writes):
    """writes: {(cta, wg): [(timer, clock, event), ...]} in write order (a ring)."""
    slots, wgs = table["slots"], table["warp_groups"]
    buf = bytearray(trace_bytes(table))
    for (cta, wg), recs in writes.items():
        for n, (timer, clock, event) in enumerate(recs):
            at = ((cta * wgs + wg) * slots + n % slots) * 16
            RECORD.pack_into(buf, at, timer, clock % 2**32, event, 10 + cta)
    return bytes(buf)


def _iteration(t0, c0):
    """One loop iteration's six stamps: iteration(get, mma)."""
    return [
        (t0, c0, 0),
        (t0 + 100, c0 + 150, 2),
        (t0 + 400, c0 + 600, 3),
        (t0 + 450, c0 + 700, 4),
        (t0 + 500, c0 + 800, 5),
        (t0 + 900, c0 + 1400, 1),
    ]


def test_record_layout():
    assert RECORD.size == 16
    raw = struct.pack("<QIHH", 123456789, 0xDEADBEEF, 7, 131)
    table = _table(slots=1, ctas=1, wgs=1)
    (only,) = records(raw, table)
    assert [(s.timer, s.clock, s.event, s.smid) for s in only] == [(123456789, 0xDEADBEEF, 7, 131)]


def test_chrome_trace_schema():
    table = _table()
    base = 1_700_000_000_000
    writes = {(0, 1): _iteration(base, 5000), (1, 1): _iteration(base + 50, 2**32 - 100)}
    writes[(0, 0)] = [(base + 10, 7, 2), (base + 20, 9, 3)]
    doc = chrome_trace(_buffer(table, writes), table, "gemm")
    json.loads(json.dumps(doc))  # plain JSON
    assert doc["otherData"]["stamps"] == 14 and doc["otherData"]["kernel"] == "gemm"
    events = doc["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    assert {
        (e["pid"], e["tid"], e["args"]["name"]) for e in meta if e["name"] == "thread_name"
    } == {
        (10, 0, "wg 0 producer"),
        (10, 1, "wg 1 consumer"),
        (11, 1, "wg 1 consumer"),
    }
    body = [e for e in events if e["ph"] != "M"]
    names = {e["name"] for e in EVENTS}
    last: dict[tuple[int, int], float] = {}
    for e in body:
        for key, ty in (("name", str), ("ph", str), ("pid", int), ("tid", int), ("ts", float)):
            assert isinstance(e[key], ty), (key, e)
        assert e["ph"] in ("X", "i")
        if e["ph"] == "X":
            assert isinstance(e["dur"], float) and e["dur"] >= 0
            assert e["name"] in names
            assert isinstance(e["args"]["cycles"], int)
        track = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(track, 0.0), "ts must not go back on a track"
        last[track] = e["ts"]
    assert min(e["ts"] for e in body) == 0.0
    x = [e for e in body if e["ph"] == "X" and e["pid"] == 10 and e["tid"] == 1]
    assert [(e["name"], e["ts"], e["dur"]) for e in x] == [
        ("iteration loop0", 0.0, 0.9),
        ("get a_b", 0.1, 0.3),
        ("mma d", 0.45, 0.05),
    ]
    assert [e["args"]["cycles"] for e in x] == [1400, 450, 100]
    # the clock wraps at 2^32 in the CTA 1 track: cycles stay right
    wrapped = [e for e in body if e["pid"] == 11 and e["name"] == "iteration loop0"]
    assert wrapped[0]["args"]["cycles"] == 1400


def test_ring_wrap_and_lost_partners():
    table = _table(slots=8, ctas=1, wgs=2)
    base = 10**12
    recs = _iteration(base, 0) + _iteration(base + 1000, 2000)  # 12 writes into 8 slots
    (_, track) = records(_buffer(table, {(0, 1): recs}), table)
    assert [s.timer for s in track] == [r[0] for r in recs[4:]]
    doc = chrome_trace(_buffer(table, {(0, 1): recs}), table)
    body = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    # the first iteration's first four stamps were overwritten: its mma's end and its own
    # end stay, unpaired, as instants; the second iteration is whole
    assert [e["ph"] for e in body].count("X") == 3
    assert {e["name"] for e in body if e["ph"] == "i"} == {"mma d end", "iteration loop0 end"}


def test_decoder_checks_the_size(tmp_path):
    table = _table()
    with pytest.raises(ValueError, match="the buffer has 16 bytes"):
        records(b"\0" * 16, table)
    with pytest.raises(ValueError, match="no 'trace' entry"):
        write_chrome_trace(tmp_path / "t.json", b"", {"kernel": "k"})
    doc = write_chrome_trace(tmp_path / "t.json", bytes(trace_bytes(table)), {"trace": table})
    assert json.loads((tmp_path / "t.json").read_text()) == doc
    assert [e for e in doc["traceEvents"] if e["ph"] != "M"] == []


# --- the launcher's checks ---------------------------------------------------------------


def test_launcher_validates_the_trace_entry(traced):
    side = traced("gemm.mlir").sidecar
    validate_sidecar(side)
    assert trace_bytes(side["trace"]) == 132 * 3 * 4096 * 16
    broken = {**side, "trace": {**side["trace"], "slots": 1000}}
    with pytest.raises(LaunchError, match="power of two"):
        validate_sidecar(broken)
    moved = {**side, "params": [side["params"][-1], *side["params"][:-1]]}
    with pytest.raises(LaunchError, match="the last"):
        validate_sidecar(moved)
    bare = {k: v for k, v in side.items() if k != "trace"}
    with pytest.raises(LaunchError, match='no "trace" entry'):
        validate_sidecar(bare)


def test_run_trace_needs_a_gpu(tmp_path, monkeypatch):
    from gpu_util import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "t.json"
    res = CliRunner().invoke(
        cli.main,
        [
            "run",
            str(EXAMPLES / "gemm.mlir"),
            "--size",
            "M=256,N=256,K=128",
            "--trace-out",
            str(out),
        ],
    )
    assert res.exit_code == 1, res.output
    assert res.output.count("\n") == 1 and "tawac run needs" in res.output, res.output
    assert not out.exists()


# --- on the GPU ------------------------------------------------------------------------------


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("persistent", [True, False])
def test_traced_gemm_is_correct_and_its_trace_is_ordered(persistent, tmp_path):
    import torch

    from tawac.runtime import load_kernel

    res = compile_file(EXAMPLES / "gemm.mlir", cubin=True, trace=True, persistent=persistent)
    kern = load_kernel(res.cubin, res.sidecar)
    m, n, k = 512, 768, 1024
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    table = res.sidecar["trace"]
    buf = kern.last_trace
    assert buf is not None and buf.numel() == trace_bytes(table)
    events = table["events"]
    grid = kern.grid(a, b, c)
    ctas = min(grid[0] * grid[1] * grid[2], table["ctas"])
    slices = records(buf.cpu().numpy().tobytes(), table)
    trips = k // 64
    for cta in range(ctas):
        for wg in range(table["warp_groups"]):
            track = slices[cta * table["warp_groups"] + wg]
            assert track, (cta, wg)
            timers = [s.timer for s in track]
            assert timers == sorted(timers), (cta, wg)
            clocks = [s.clock for s in track]
            assert all((y - x) % 2**32 < 2**31 for x, y in zip(clocks, clocks[1:], strict=False))
            assert len({s.smid for s in track}) == 1
            kinds = {events[s.event]["op"] for s in track}
            role = table["roles"][wg]
            want = (
                {"iteration", "acquire", "put"}
                if role == "producer"
                else {"iteration", "get", "mma", "mma.wait", "consumed", "epilogue"}
            )
            assert kinds == want, (cta, wg, kinds)
            assert all(events[s.event]["role"] == role for s in track)
            iterations = sum(1 for s in track if events[s.event]["op"] == "iteration") // 2
            assert iterations % trips == 0 and iterations >= trips
    for track in slices[ctas * table["warp_groups"] :]:
        assert track == []
    doc = write_chrome_trace(tmp_path / "gemm.json", buf, res.sidecar)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) * 2 == doc["otherData"]["stamps"]  # every stamp paired


@pytest.mark.gpu
@requires_gpu
def test_run_command_writes_a_trace(tmp_path):
    out = tmp_path / "gemm.trace.json"
    res = CliRunner().invoke(
        cli.main,
        [
            "run",
            str(EXAMPLES / "gemm.mlir"),
            "--size",
            "M=256,N=512,K=512",
            "--trace-out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert any(e["ph"] == "X" and e["name"].startswith("mma") for e in doc["traceEvents"])
