"""The decoder of an instrumented build's trace: the buffer the
launcher filled (`Kernel.last_trace`) and the sidecar's "trace" entry -> Chrome trace
JSON (the Trace Event Format that chrome://tracing and ui.perfetto.dev open), and the
measured steady state of each main loop (`loop_intervals`).

The buffer (docs/abi.md, "trace") holds one ring of `slots` records of 16 bytes per
track (CTA x warp group, in order `cta * warp_groups + wg`), then two sync records per
track; a record is four little-endian u32 words {a, b, c, event id u16 | smid u16}. The
sync records (events 0 and 1, at the start and the end of the warp group's partition)
are {%globaltimer low, high (ns), %clock}; the ring's stamps are {%clock, iteration, 0},
written in slot order; where it wrapped, the oldest stamp follows the one place where
the clock (counted from the start's) goes back. A record that is all zero was never
written. The sync pair maps a stamp's cycles to nanoseconds (linearly between the two);
`%clock` is 32 bits, so a partition may last up to 2^32 cycles (about 2 s).

Output: one track per (SM, warp group): `pid` = SM id, `tid` = warp group index in the
CTA (0 the producer), `ts` and `dur` in microseconds from the first stamp of the whole
trace. A begin/end pair of one span (same `span`, nested properly) becomes a complete
event (`"ph": "X"`); a stamp whose partner the ring dropped becomes an instant
(`"ph": "i"`). Each event's `args` hold the CTA, the loop, the iteration and the SM
cycles between its stamps. Events are sorted by (pid, tid, ts).
"""

from __future__ import annotations

import json
import statistics
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD = struct.Struct("<IIIHH")  # stamp: clock, iteration, 0; sync: timer lo, hi, clock
#: Sync records per track, after all the rings.
HEADER = 2
#: Cycles per nanosecond where a slice's sync pair cannot say (the H100's boost clock).
DEFAULT_GHZ = 1.755


@dataclass(frozen=True)
class Stamp:
    """One stamp of the ring, its time in ns mapped from its cycles by the sync pair."""

    cta: int
    wg: int
    clock: int  # %clock (32 bits)
    iteration: int  # the count of its main loop's iterations so far (0 outside loops)
    event: int
    smid: int
    ns: int  # an integer: a float cannot hold %globaltimer's ~1.8e18 ns to the ns


@dataclass(frozen=True)
class Slice:
    """One (CTA, warp group)'s records: its sync pair and its stamps, in order."""

    cta: int
    wg: int
    start_ns: int  # %globaltimer at the partition's start (0: never ran)
    end_ns: int
    start_clock: int  # %clock (32 bits)
    end_clock: int
    smid: int
    stamps: list[Stamp]

    @property
    def ghz(self) -> float:
        """The SM clock between the sync pair, cycles per ns."""
        ns = self.end_ns - self.start_ns
        cycles = (self.end_clock - self.start_clock) % (1 << 32)
        return cycles / ns if ns > 0 and cycles > 0 else DEFAULT_GHZ


def _check(buf: memoryview, trace: Mapping[str, Any]) -> tuple[int, int, int]:
    slots, wgs, ctas = int(trace["slots"]), int(trace["warp_groups"]), int(trace["ctas"])
    size = int(trace.get("record_bytes", RECORD.size))
    if size != RECORD.size:
        raise ValueError(f"trace: record_bytes {size} is not {RECORD.size}")
    if len(buf) != ctas * wgs * (slots + HEADER) * size:
        raise ValueError(
            f"trace: the buffer has {len(buf)} bytes, the sidecar says "
            f"{ctas} x {wgs} x ({slots} + {HEADER}) x {size}"
        )
    return slots, wgs, ctas


def slices(buf: bytes | bytearray | memoryview, trace: Mapping[str, Any]) -> list[Slice]:
    """Per (CTA, warp group), in order `cta * warp_groups + wg`, its records (the ring
    unrolled)."""
    data = memoryview(bytes(buf))
    slots, wgs, ctas = _check(data, trace)
    out: list[Slice] = []
    for track in range(ctas * wgs):
        cta, wg = divmod(track, wgs)
        base = track * slots * RECORD.size
        sync = (ctas * wgs * slots + track * HEADER) * RECORD.size
        (lo0, hi0, c0, _, smid), (lo1, hi1, c1, _, _) = (
            RECORD.unpack_from(data, sync + i * RECORD.size) for i in range(HEADER)
        )
        t0, t1 = lo0 | hi0 << 32, lo1 | hi1 << 32
        raw = [RECORD.unpack_from(data, base + i * RECORD.size) for i in range(slots)]
        raw = [r for r in raw if r != (0, 0, 0, 0, 0)]
        since = [(r[0] - c0) % (1 << 32) for r in raw]
        wrap = next((i for i in range(1, len(raw)) if since[i] < since[i - 1]), 0)
        raw, since = raw[wrap:] + raw[:wrap], since[wrap:] + since[:wrap]
        sl = Slice(cta, wg, t0, t1, c0, c1, smid, [])
        ghz = sl.ghz
        for (clock, iteration, _, event, sm), cycles in zip(raw, since, strict=True):
            ns = t0 + round(cycles / ghz) if t0 else 0
            sl.stamps.append(Stamp(cta, wg, clock, iteration, event, sm, ns))
        out.append(sl)
    return out


def _buffer_bytes(buf: Any) -> bytes:
    """Bytes of a torch tensor (on any device), numpy array or bytes-like."""
    if hasattr(buf, "cpu") and hasattr(buf, "numpy"):
        return buf.detach().cpu().contiguous().numpy().tobytes()
    if hasattr(buf, "tobytes"):
        return buf.tobytes()
    return bytes(buf)


def chrome_trace(buf: Any, trace: Mapping[str, Any], kernel: str = "kernel") -> dict[str, Any]:
    """The Chrome trace (a dict for `json.dump`) of one launch's buffer."""
    events: Sequence[Mapping[str, Any]] = trace["events"]
    roles: Sequence[str] = trace.get("roles") or []
    sls = [sl for sl in slices(_buffer_bytes(buf), trace) if sl.start_ns]
    t0 = min((sl.start_ns for sl in sls), default=0)
    out: list[dict[str, Any]] = []
    tracks: set[tuple[int, int]] = set()
    for sl in sls:
        tracks.add((sl.smid, sl.wg))
        out.append(_whole(sl, t0))
        out.extend(_spans(sl.stamps, events, t0))
    out.sort(key=lambda e: (e["pid"], e["tid"], e["ts"]))
    meta: list[dict[str, Any]] = []
    for pid in sorted({p for p, _ in tracks}):
        meta.append(_meta("process_name", pid, 0, f"SM {pid}"))
    for pid, tid in sorted(tracks):
        role = roles[tid] if tid < len(roles) else "?"
        meta.append(_meta("thread_name", pid, tid, f"wg {tid} {role}"))
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ns",
        "otherData": {
            "kernel": kernel,
            "stamps": sum(len(sl.stamps) for sl in sls),
            "every": int(trace.get("every", 1)),
            "t0_ns": t0,
        },
    }


def _meta(name: str, pid: int, tid: int, value: str) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {"name": value}}


def _whole(sl: Slice, t0: int) -> dict[str, Any]:
    """The warp group's whole partition (its sync pair) as one complete event."""
    return {
        "name": "warp group",
        "cat": "sync",
        "ph": "X",
        "ts": (sl.start_ns - t0) / 1000.0,
        "dur": max(sl.end_ns - sl.start_ns, 0) / 1000.0,
        "pid": sl.smid,
        "tid": sl.wg,
        "args": {"cta": sl.cta, "ghz": round(sl.ghz, 4)},
    }


def _spans(sl: list[Stamp], events: Sequence[Mapping[str, Any]], t0: int) -> list[dict]:
    """One track's stamps as complete events (begin/end pairs) and instants."""
    out: list[dict[str, Any]] = []
    open_: list[tuple[Stamp, Mapping[str, Any]]] = []
    for s in sl:
        if s.event >= len(events):
            out.append(_instant(s, {"name": f"event {s.event}", "edge": "?"}, t0))
            continue
        ev = events[s.event]
        if ev.get("edge") == "begin":
            open_.append((s, ev))
            continue
        if ev.get("edge") == "at":
            out.append(_instant(s, ev, t0))
            continue
        match = next(
            (i for i in range(len(open_) - 1, -1, -1) if open_[i][1]["span"] == ev["span"]),
            None,
        )
        if match is None:
            out.append(_instant(s, ev, t0))
            continue
        for b, bev in open_[match + 1 :]:  # begins whose ends were lost
            out.append(_instant(b, bev, t0))
        begin, bev = open_[match]
        del open_[match:]
        out.append(
            {
                "name": bev["name"],
                "cat": bev.get("op", ""),
                "ph": "X",
                "ts": (begin.ns - t0) / 1000.0,
                "dur": max(s.ns - begin.ns, 0.0) / 1000.0,
                "pid": s.smid,
                "tid": s.wg,
                "args": {
                    "cta": s.cta,
                    "loop": bev.get("loop", -1),
                    "iteration": begin.iteration,
                    "cycles": (s.clock - begin.clock) % (1 << 32),
                },
            }
        )
    out.extend(_instant(b, bev, t0) for b, bev in open_)
    return out


def _instant(s: Stamp, ev: Mapping[str, Any], t0: int) -> dict[str, Any]:
    edge = ev.get("edge", "")
    return {
        "name": ev["name"] if edge == "at" else f"{ev['name']} {edge}".strip(),
        "cat": ev.get("op", ""),
        "ph": "i",
        "s": "t",
        "ts": (s.ns - t0) / 1000.0,
        "pid": s.smid,
        "tid": s.wg,
        "args": {
            "cta": s.cta,
            "loop": ev.get("loop", -1),
            "iteration": s.iteration,
            "clock": s.clock,
        },
    }


def write_chrome_trace(path: str | Path, buf: Any, sidecar: Mapping[str, Any]) -> dict[str, Any]:
    """Decodes one launch's buffer with its sidecar and writes the JSON to `path`."""
    if "trace" not in sidecar:
        raise ValueError("the sidecar has no 'trace' entry: compile with --trace")
    doc = chrome_trace(buf, sidecar["trace"], sidecar.get("kernel", "kernel"))
    Path(path).write_text(json.dumps(doc))
    return doc


# -- the measured steady state ----------------------------------------------------------------


@dataclass(frozen=True)
class LoopInterval:
    """The measured time per iteration of one main loop of one role: the median over
    pairs of stamps at the start of sampled iterations in one run of the loop (no stamp
    of another loop or outside it between them), the first pair of each run left out
    where the run has more (the ring filling)."""

    role: str
    loop: int
    cycles: float  # median SM cycles per iteration
    ns: float  # the same in ns, at each slice's clock
    pairs: int  # pairs the median is over
    ghz: float  # median SM clock of the slices measured


def loop_intervals(buf: Any, trace: Mapping[str, Any]) -> list[LoopInterval]:
    """Each (role, main loop)'s measured steady-state interval, from one launch's trace."""
    events: Sequence[Mapping[str, Any]] = trace["events"]
    roles: Sequence[str] = trace.get("roles") or []
    per: dict[tuple[str, int], list[tuple[float, float]]] = {}
    clocks: dict[tuple[str, int], list[float]] = {}
    for sl in slices(_buffer_bytes(buf), trace):
        if not sl.start_ns:
            continue
        role = roles[sl.wg] if sl.wg < len(roles) else "?"
        for loop, runs in _loop_runs(sl.stamps, events).items():
            for run in runs:
                pairs = list(zip(run, run[1:], strict=False))
                if len(pairs) > 1:
                    pairs = pairs[1:]
                for (i1, c1), (i2, c2) in pairs:
                    if i2 <= i1:
                        continue
                    cycles = ((c2 - c1) % (1 << 32)) / (i2 - i1)
                    per.setdefault((role, loop), []).append((cycles, cycles / sl.ghz))
                    clocks.setdefault((role, loop), []).append(sl.ghz)
    out = []
    for (role, loop), vals in sorted(per.items()):
        out.append(
            LoopInterval(
                role,
                loop,
                statistics.median(v[0] for v in vals),
                statistics.median(v[1] for v in vals),
                len(vals),
                statistics.median(clocks[(role, loop)]),
            )
        )
    return out


def _loop_runs(
    stamps: list[Stamp], events: Sequence[Mapping[str, Any]]
) -> dict[int, list[list[tuple[int, int]]]]:
    """Per loop: its runs, each the (iteration, clock) of its iteration-begin stamps with
    no stamp of another loop (or of none) between them."""
    runs: dict[int, list[list[tuple[int, int]]]] = {}
    current: int | None = None
    for s in stamps:
        if s.event >= len(events):
            continue
        ev = events[s.event]
        loop = int(ev.get("loop", -1))
        if loop != current:
            current = loop
            if loop >= 0:
                runs.setdefault(loop, []).append([])
        if loop >= 0 and ev.get("op") == "iteration" and ev.get("edge") in ("begin", "at"):
            runs[loop][-1].append((s.iteration, s.clock))
    return {loop: [r for r in rs if len(r) > 1] for loop, rs in runs.items()}


# -- a measured window, for the timeline picture ----------------------------------------------


@dataclass(frozen=True)
class MeasuredSpan:
    """One complete event of a Chrome trace, in SM cycles from the window's start."""

    name: str  # "get k", "mma s", "put v", ...
    op: str  # the event's category: get, put, acquire, mma, mma.wait, consumed, epilogue
    start: float
    end: float


@dataclass(frozen=True)
class MeasuredLane:
    """One warp group's track in the window: its spans and where its iterations start."""

    name: str  # "wg 1 consumer"
    role: str
    spans: tuple[MeasuredSpan, ...]
    iteration_starts: tuple[float, ...]


@dataclass(frozen=True)
class Measured:
    """`shown` consecutive steady-state iterations of one CTA's main loop as measured
    (`measured_window`): the SM and CTA, the loop, the clock, the median interval of that
    loop over every consumer track of the trace (`ii`, cycles; `iterations` it is over)
    and the CTA's warp groups' lanes, cycles counted from the first shown iteration's
    start on the reference lane (the first consumer)."""

    sm: int
    cta: int
    loop: int
    ghz: float
    ii: float
    iterations: int
    first_iteration: int
    span: float  # cycles from the first shown iteration's start to the last one's end
    lanes: tuple[MeasuredLane, ...]


def _track_names(events: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], str]:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }


def measured_window(doc: Mapping[str, Any], shown: int = 3, sm: int | None = None) -> Measured:
    """`shown` steady-state iterations of the innermost main loop (the loop with the most
    iteration spans) of one CTA, from a Chrome trace of an instrumented build stamped on
    every iteration (`tawac run --trace-out` of a `--trace-every 1` build). The CTA: on
    SM `sm` when given, else the consumer track with the most iterations of the loop; the
    window: its run of consecutive iterations nearest the middle of the track, from its
    second iteration (the first fills the rings). ValueError when the trace has no such
    run (sampled stamps, a loop shorter than `shown + 1` iterations)."""
    events: Sequence[Mapping[str, Any]] = doc.get("traceEvents") or []
    names = _track_names(events)
    iterations = [e for e in events if e.get("ph") == "X" and e.get("cat") == "iteration"]
    if not iterations:
        raise ValueError(
            "the trace has no iteration spans: measure a build stamped on every iteration "
            "(--trace-every 1)"
        )
    loops: dict[int, int] = {}
    for e in iterations:
        loops[e["args"]["loop"]] = loops.get(e["args"]["loop"], 0) + 1
    loop = max(loops, key=lambda k: (loops[k], k))

    def consumer(track: tuple[int, int]) -> bool:
        return names.get(track, "").endswith("consumer")

    per_track: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for e in iterations:
        track = (e["pid"], e["tid"])
        if e["args"]["loop"] == loop and consumer(track):
            per_track.setdefault(track, []).append(e)
    cycles = [e["args"]["cycles"] for es in per_track.values() for e in es]
    candidates = [t for t in per_track if sm is None or t[0] == sm]
    if not candidates:
        raise ValueError(f"the trace has no consumer iterations of loop {loop} on SM {sm}")
    ref = max(candidates, key=lambda t: (len(per_track[t]), -t[0], -t[1]))
    runs = _consecutive(sorted(per_track[ref], key=lambda e: e["ts"]))
    runs = [r for r in runs if len(r) >= shown + 1]
    if not runs:
        raise ValueError(
            f"no run of {shown + 1} consecutive iterations of loop {loop} on SM {ref[0]}"
        )
    run = runs[len(runs) // 2]
    window = run[1 : shown + 1]
    ghz = _track_ghz(events, ref)
    t0 = window[0]["ts"]
    t1 = window[-1]["ts"] + window[-1]["dur"]
    cta = window[0]["args"]["cta"]

    def cyc(ts: float) -> float:
        return round((ts - t0) * 1000.0 * ghz, 2)

    lanes = []
    for track in sorted(t for t in names if t[0] == ref[0]):
        mine = [
            e
            for e in events
            if (e.get("pid"), e.get("tid")) == track
            and e.get("ph") == "X"
            and e.get("cat") != "sync"
            and e.get("args", {}).get("cta") == cta
            and e["ts"] < t1
            and e["ts"] + e["dur"] > t0
        ]
        spans = tuple(
            MeasuredSpan(e["name"], e.get("cat", ""), cyc(e["ts"]), cyc(e["ts"] + e["dur"]))
            for e in mine
            if e.get("cat") != "iteration"
        )
        starts = tuple(cyc(e["ts"]) for e in mine if e.get("cat") == "iteration" and e["ts"] >= t0)
        name = names[track]
        lanes.append(MeasuredLane(name, name.split()[-1], spans, starts))
    return Measured(
        sm=ref[0],
        cta=cta,
        loop=loop,
        ghz=ghz,
        ii=statistics.median(cycles),
        iterations=len(cycles),
        first_iteration=window[0]["args"]["iteration"],
        span=cyc(t1),
        lanes=tuple(lanes),
    )


def _consecutive(its: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """A track's iteration spans (in time order) cut into runs of one CTA's consecutive
    iterations."""
    runs: list[list[Mapping[str, Any]]] = []
    for e in its:
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and e["args"]["cta"] == last["args"]["cta"]
            and e["args"]["iteration"] == last["args"]["iteration"] + 1
        ):
            runs[-1].append(e)
        else:
            runs.append([e])
    return runs


def _track_ghz(events: Sequence[Mapping[str, Any]], track: tuple[int, int]) -> float:
    """The SM clock of a track: its "warp group" event's (the sync pair), else
    `DEFAULT_GHZ`."""
    for e in events:
        if (e.get("pid"), e.get("tid")) == track and e.get("cat") == "sync":
            ghz = e.get("args", {}).get("ghz")
            if ghz:
                return float(ghz)
    return DEFAULT_GHZ
