"""Instrumented builds (`--trace`): the sidecar's "trace" entry and
trailing parameter, ptxas's report of the instrumented examples, the decoder to Chrome
trace JSON on synthetic buffers, the launcher's checks, and (GPU) a traced GEMM."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpu_util import requires_gpu

from tawac.driver import compile_file
from tawac.runtime.arguments import LaunchError, trace_bytes, validate_sidecar
from tawac.runtime.trace import RECORD, chrome_trace, loop_intervals, slices, write_chrome_trace
from tawac.tools import cli

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


def test_traced_loop_with_a_release_lag_keeps_its_wgmmas_pipelined():
    """A loop that keeps an MMA in flight across iterations (a release lag) ends in a drain
    of releases that runs before the last MMAs' wait; a sampled stamp there advanced the
    ring register and made ptxas 13.0 serialize every wgmma of the kernel (C7514: traced
    runs 1.22-1.32x the plain one). The sampled build does not tick that drain."""
    plain = compile_file(EXAMPLES / "gemm.mlir", cubin=True, params={"BLOCK_N": 128}, mma_depth=1)
    assert "C7514" not in plain.ptxas_report  # the plain build pipelines them
    res = compile_file(
        EXAMPLES / "gemm.mlir",
        cubin=True,
        params={"BLOCK_N": 128},
        mma_depth=1,
        trace=True,
        trace_every=8,
    )
    assert "C7514" not in res.ptxas_report, res.ptxas_report


@pytest.mark.parametrize("name", INSTRUMENTED)
def test_instrumented_example_assembles_cleanly(name, traced):
    res = traced(name)
    report = res.ptxas_report
    # a stamp at every boundary costs the producer (24 registers) a few bytes of spill
    # (16 at most, in the causal attention's producer); the sampled build, which
    # measures, has none (below)
    spill = re.search(r"(\d+) bytes spill stores", report)
    assert spill is not None and int(spill.group(1)) <= 16, report
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
    # the leader's predicated 16-byte stores: one per stamp site, and the two sync
    # records of each partition (the only reads of %globaltimer)
    parts = len(set(e["wg"] for e in t["events"] if e["wg"] >= 0))
    assert res.ptx.count("%globaltimer;") == 2 * parts
    assert res.ptx.count("%clock;") == len(ids) - 2 + 2 * parts
    assert res.ptx.count("st.global.v4.b32") == len(ids) - 2 + 2 * parts
    assert "%clock64" not in res.ptx
    assert re.search(r"\.param \.u64 tawac_trace\s*\)", res.ptx)


SAMPLED = [*INSTRUMENTED, "attention_d64.mlir", "gemm_residual.mlir"]


@pytest.mark.parametrize("name", SAMPLED)
def test_sampled_build_stamps_iterations_only_and_assembles_cleanly(name):
    res = compile_file(EXAMPLES / name, cubin=True, trace=True, trace_every=16)
    report = res.ptxas_report
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), report
    assert "warning" not in report.lower() and "C75" not in report, report
    t = res.sidecar["trace"]
    assert t["every"] == 16
    ops = {(e["op"], e["edge"]) for e in t["events"]}
    assert ops <= {
        ("sync", "begin"),
        ("sync", "end"),
        ("iteration", "at"),
        ("epilogue", "begin"),
        ("epilogue", "end"),
    }, ops
    ticks = [e for e in t["events"] if e["op"] == "iteration"]
    assert {e["role"] for e in ticks} == {"producer", "consumer"}
    # the innermost loops are sampled; an outer main loop (the tile loop) is not
    assert any(e["sampled"] for e in ticks)
    assert all(not e["sampled"] for e in t["events"] if e["op"] != "iteration")


def test_trace_options_are_checked():
    from tawac.support.diagnostics import CompileError

    with pytest.raises(CompileError, match="every must be a power of two"):
        compile_file(EXAMPLES / "gemm.mlir", cubin=False, trace=True, trace_every=3)


def test_traced_build_keeps_the_register_plan():
    """setmaxnreg must not ask for more than the launch gave the CTA (a consumer's `inc`
    would wait forever): the traced build keeps the plan's budgets."""
    plain = compile_file(EXAMPLES / "gemm.mlir", cubin=False)
    traced = compile_file(EXAMPLES / "gemm.mlir", cubin=False, trace=True)
    plan = re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32 \d+;", plain.ptx)
    assert plan and re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32 \d+;", traced.ptx) == plan


@pytest.mark.parametrize("name", ["gemm.mlir", "attention.mlir"])
def test_uninstrumented_build_has_no_trace(name):
    res = compile_file(EXAMPLES / name, cubin=False)
    assert "trace" not in res.sidecar
    assert all(p["kind"] != "trace" for p in res.sidecar["params"])
    assert "globaltimer" not in res.ptx and "tawac_trace" not in res.ptx


# --- the decoder on synthetic buffers ----------------------------------------------------

SYNC = [
    {"id": 0, "name": "warp group", "op": "sync", "span": 0, "loop": -1, "edge": "begin"},
    {"id": 1, "name": "warp group", "op": "sync", "span": 0, "loop": -1, "edge": "end"},
]
EVENTS = [
    *SYNC,
    {"id": 2, "name": "iteration loop0", "op": "iteration", "span": 1, "loop": 0, "edge": "begin"},
    {"id": 3, "name": "iteration loop0", "op": "iteration", "span": 1, "loop": 0, "edge": "end"},
    {"id": 4, "name": "get a_b", "op": "get", "span": 2, "loop": 0, "edge": "begin"},
    {"id": 5, "name": "get a_b", "op": "get", "span": 2, "loop": 0, "edge": "end"},
    {"id": 6, "name": "mma d", "op": "mma", "span": 3, "loop": 0, "edge": "begin"},
    {"id": 7, "name": "mma d", "op": "mma", "span": 3, "loop": 0, "edge": "end"},
]  # fmt: skip
for e in EVENTS:
    e["role"] = "consumer"

GHZ = 2  # cycles per ns of the synthetic traces


def _table(slots=8, ctas=2, wgs=2, events=EVENTS, every=1):
    return {
        "slots": slots,
        "ctas": ctas,
        "every": every,
        "warp_groups": wgs,
        "record_bytes": 16,
        "roles": ["producer", "consumer"][:wgs],
        "events": events,
    }


def _buffer(table, writes, start=10**12, clock0=1000):
    """writes: {(cta, wg): [(cycles since the start, event, iteration), ...]} in write
    order (a ring); each written track gets sync records at `start` ns / `clock0` and at
    its last stamp + 100 cycles, the clock running at GHZ."""
    slots, wgs = table["slots"], table["warp_groups"]
    buf = bytearray(trace_bytes(table))
    tracks = table["ctas"] * wgs
    for (cta, wg), recs in writes.items():
        track = cta * wgs + wg
        smid = 10 + cta
        end = max(r[0] for r in recs) + 100
        for i, (cycles, event) in enumerate(((0, 0), (end, 1))):
            t = start + cycles // GHZ
            at = (tracks * slots + track * 2 + i) * 16
            RECORD.pack_into(
                buf, at, t & 0xFFFFFFFF, t >> 32, (clock0 + cycles) % 2**32, event, smid
            )
        for n, (cycles, event, iteration) in enumerate(recs):
            at = (track * slots + n % slots) * 16
            RECORD.pack_into(buf, at, (clock0 + cycles) % 2**32, iteration, 0, event, smid)
    return bytes(buf)


def _iteration(c0, it=1):
    """One loop iteration's six stamps, from cycle c0: iteration(get, mma)."""
    return [
        (c0, 2, it),
        (c0 + 200, 4, it),
        (c0 + 800, 5, it),
        (c0 + 900, 6, it),
        (c0 + 1000, 7, it),
        (c0 + 1800, 3, it),
    ]


def test_record_layout():
    assert RECORD.size == 16
    table = _table(slots=2, ctas=1, wgs=1)
    raw = bytearray(trace_bytes(table))
    RECORD.pack_into(raw, 0, 1200, 7, 0, 9, 131)  # a stamp 500 cycles in, iteration 7
    RECORD.pack_into(raw, 32, 5, 1, 700, 0, 131)  # start: timer 2^32 + 5 ns, clock 700
    RECORD.pack_into(raw, 48, 505, 1, 1700, 1, 131)  # end: 500 ns and 1000 cycles later
    (only,) = slices(bytes(raw), table)
    assert (only.start_ns, only.end_ns, only.smid, only.ghz) == (2**32 + 5, 2**32 + 505, 131, 2.0)
    (s,) = only.stamps
    assert (s.clock, s.iteration, s.event, s.smid, s.ns) == (1200, 7, 9, 131, 2**32 + 5 + 250)


def test_stamp_times_are_exact_at_a_real_globaltimer():
    # %globaltimer reads ~1.8e18 ns on a running machine: a float holds it only to 256 ns,
    # which put stamps outside their own warp group's span (found on the H200)
    table = _table(slots=8, ctas=1, wgs=1)
    start = 1_795_672_232_090_896_480
    (sl,) = slices(_buffer(table, {(0, 0): [(4, 2, 0), (5000, 3, 0)]}, start=start), table)
    times = [s.ns for s in sl.stamps]
    assert all(isinstance(t, int) for t in times)
    assert sl.start_ns < times[0] < times[1] < sl.end_ns
    assert times[1] - sl.start_ns == 5000 // GHZ


def test_chrome_trace_schema():
    table = _table(slots=16)
    writes = {
        (0, 1): _iteration(0) + _iteration(2000, 2),
        (1, 1): _iteration(100),
        (0, 0): [(20, 4, 0), (40, 5, 0)],
    }
    # CTA 1's clock wraps at 2^32 during its iteration: the cycles stay right
    doc = chrome_trace(_buffer(table, writes), table, "gemm")
    assert doc == chrome_trace(_buffer(table, writes), table, "gemm")
    json.loads(json.dumps(doc))  # plain JSON
    assert doc["otherData"]["stamps"] == 20 and doc["otherData"]["kernel"] == "gemm"
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
        track = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(track, 0.0), "ts must not go back on a track"
        last[track] = e["ts"]
    assert min(e["ts"] for e in body) == 0.0
    x = [e for e in body if e["ph"] == "X" and e["pid"] == 10 and e["tid"] == 1]
    assert [(e["name"], e["ts"], e["dur"]) for e in x][:4] == [
        ("warp group", 0.0, 1.95),
        ("iteration loop0", 0.0, 0.9),
        ("get a_b", 0.1, 0.3),
        ("mma d", 0.45, 0.05),
    ]
    assert [e["args"]["cycles"] for e in x[1:4]] == [1800, 600, 100]
    assert [e["args"]["iteration"] for e in x if e["name"] == "iteration loop0"] == [1, 2]


def test_clock_wrap_keeps_cycles():
    table = _table(ctas=1)
    doc = chrome_trace(_buffer(table, {(0, 1): _iteration(0)}, clock0=2**32 - 500), table)
    (it,) = [e for e in doc["traceEvents"] if e.get("name") == "iteration loop0"]
    assert it["args"]["cycles"] == 1800 and it["dur"] == 0.9


def test_ring_wrap_and_lost_partners():
    table = _table(slots=8, ctas=1, wgs=2)
    recs = _iteration(0) + _iteration(2000, 2)  # 12 writes into 8 slots
    (_, track) = slices(_buffer(table, {(0, 1): recs}), table)
    assert [s.clock - 1000 for s in track.stamps] == [r[0] for r in recs[4:]]
    doc = chrome_trace(_buffer(table, {(0, 1): recs}), table)
    body = [e for e in doc["traceEvents"] if e["ph"] != "M" and e["name"] != "warp group"]
    # the first iteration's first four stamps were overwritten: its mma's end and its own
    # end stay, unpaired, as instants; the second iteration is whole
    assert [e["ph"] for e in body].count("X") == 3
    assert {e["name"] for e in body if e["ph"] == "i"} == {"mma d end", "iteration loop0 end"}


TICKS = [
    *SYNC,
    {"id": 2, "name": "iteration loop0", "op": "iteration", "span": 1, "loop": 0, "edge": "at",
     "role": "consumer", "sampled": True},
    {"id": 3, "name": "epilogue", "op": "epilogue", "span": 2, "loop": -1, "edge": "begin",
     "role": "consumer"},
    {"id": 4, "name": "epilogue", "op": "epilogue", "span": 2, "loop": -1, "edge": "end",
     "role": "consumer"},
    {"id": 5, "name": "iteration loop0", "op": "iteration", "span": 3, "loop": 0, "edge": "at",
     "role": "producer", "sampled": True},
]  # fmt: skip


def test_loop_intervals_of_a_sampled_trace():
    table = _table(slots=64, ctas=2, events=TICKS, every=4)

    def tile(c0, first, ii, n=4):
        """n samples every 4th iteration from iteration `first`, `ii` cycles each; then
        the epilogue."""
        ticks = [(c0 + k * 4 * ii, 2, first + 4 * k) for k in range(n)]
        end = ticks[-1][0] + 2 * ii
        return [*ticks, (end, 3, 0), (end + 500, 4, 0)]

    # the first pair of each run (the ring filling) is left out: make it slow
    consumer0 = tile(0, 4, 1000) + tile(30000, 20, 1100)
    consumer0[1] = (consumer0[1][0] + 4000, 2, 8)
    consumer1 = tile(0, 4, 1200, n=3)
    producer = [(k * 4 * 900, 5, 4 * (k + 1)) for k in range(6)]  # one run over the tiles
    buf = _buffer(table, {(0, 1): consumer0, (1, 1): consumer1, (0, 0): producer})
    got = {(iv.role, iv.loop): iv for iv in loop_intervals(buf, table)}
    assert set(got) == {("consumer", 0), ("producer", 0)}
    con = got[("consumer", 0)]
    # pairs kept: tile 1 of CTA 0: 2 (its first, slowed, dropped), tile 2: 2, CTA 1: 1
    assert con.pairs == 5
    assert con.cycles == 1100 and con.ns == 550 and con.ghz == GHZ
    assert got[("producer", 0)].cycles == 900 and got[("producer", 0)].pairs == 4


def test_decoder_checks_the_size(tmp_path):
    table = _table()
    with pytest.raises(ValueError, match="the buffer has 16 bytes"):
        slices(b"\0" * 16, table)
    with pytest.raises(ValueError, match="no 'trace' entry"):
        write_chrome_trace(tmp_path / "t.json", b"", {"kernel": "k"})
    doc = write_chrome_trace(tmp_path / "t.json", bytes(trace_bytes(table)), {"trace": table})
    assert json.loads((tmp_path / "t.json").read_text()) == doc
    assert [e for e in doc["traceEvents"] if e["ph"] != "M"] == []


# --- the launcher's checks ---------------------------------------------------------------


def test_launcher_validates_the_trace_entry(traced):
    side = traced("gemm.mlir").sidecar
    validate_sidecar(side)
    assert trace_bytes(side["trace"]) == 132 * 3 * (4096 + 2) * 16
    with pytest.raises(LaunchError, match="power of two"):
        validate_sidecar({**side, "trace": {**side["trace"], "slots": 1}})
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


def _traced_gemm(res, m: int, n: int, k: int):
    """The traced GEMM `res` loaded and launched once on random inputs (poisoned output),
    its result checked against float32 torch; returns the kernel (its `last_trace`) and
    the arguments."""
    import torch

    from tawac.runtime import load_kernel

    kern = load_kernel(res.cubin, res.sidecar)
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
    return kern, (a, b, c)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("persistent", [True, False])
def test_traced_gemm_is_correct_and_its_trace_is_ordered(persistent, tmp_path):

    res = compile_file(EXAMPLES / "gemm.mlir", cubin=True, trace=True, persistent=persistent)
    m, n, k = 512, 768, 1024
    kern, args = _traced_gemm(res, m, n, k)
    table = res.sidecar["trace"]
    buf = kern.last_trace
    assert buf is not None and buf.numel() == trace_bytes(table)
    events = table["events"]
    grid = kern.grid(*args)
    ctas = min(grid[0] * grid[1] * grid[2], table["ctas"])
    sls = slices(buf.cpu().numpy().tobytes(), table)
    trips = k // 64
    for cta in range(ctas):
        for wg in range(table["warp_groups"]):
            sl = sls[cta * table["warp_groups"] + wg]
            track = sl.stamps
            assert track and sl.start_ns and sl.end_ns > sl.start_ns, (cta, wg)
            assert 0.5 < sl.ghz < 2.5, sl.ghz  # the SM clock, from the sync pair
            times = [s.ns for s in track]
            assert times == sorted(times), (cta, wg)
            assert sl.start_ns <= times[0] and times[-1] <= sl.end_ns + 1
            assert len({s.smid for s in track}) == 1 and track[0].smid == sl.smid
            kinds = {events[s.event]["op"] for s in track}
            role = table["roles"][wg]
            want = (
                {"iteration", "acquire", "put"}
                if role == "producer"
                else {"iteration", "get", "mma", "mma.wait", "consumed", "epilogue"}
            )
            assert kinds == want, (cta, wg, kinds)
            assert all(events[s.event]["role"] == role for s in track)
            begins = [
                s
                for s in track
                if events[s.event]["op"] == "iteration" and events[s.event]["edge"] == "begin"
            ]
            assert len(begins) % trips == 0 and len(begins) >= trips
            # the iteration field is the induction variable / step: 0 .. trips-1 per tile
            assert sorted({s.iteration for s in begins}) == list(range(trips))
    for sl in sls[ctas * table["warp_groups"] :]:
        assert sl.stamps == [] and sl.start_ns == 0
    doc = write_chrome_trace(tmp_path / "gemm.json", buf, res.sidecar)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] != "sync"]
    assert len(xs) * 2 == doc["otherData"]["stamps"]  # every stamp paired


@pytest.mark.gpu
@requires_gpu
def test_sampled_trace_measures_the_steady_state():
    """A sampled build (every 8th iteration) of the GEMM at 4096^3: correct output, and
    its measured steady state per main-loop iteration is near the model's (the
    calibration's input; docs/perf.md has the corpus-wide comparison)."""

    from tawac.ir.parser import parse_file
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    res = compile_file(EXAMPLES / "gemm.mlir", cubin=True, trace=True, trace_every=8)
    kern, _ = _traced_gemm(res, 4096, 4096, 4096)
    got = {(iv.role, iv.loop): iv for iv in loop_intervals(kern.last_trace, res.sidecar["trace"])}
    assert set(got) == {("producer", 0), ("consumer", 0)}
    con = got[("consumer", 0)]
    # 128 tiles' worth of pairs: 64 iterations a tile, a sample every 8th
    assert con.pairs >= 132 * 4
    model = explain_module(parse_file(EXAMPLES / "gemm.mlir"), PipelineOptions(), timeline=True)[
        "timeline"
    ]["ii"]
    # the producer keeps pace with the consumer; the model within a factor of 2
    assert abs(got[("producer", 0)].cycles - con.cycles) < 0.1 * con.cycles
    assert 0.5 * model < con.cycles < 2 * model, (con.cycles, model)


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
