"""The decoder of an instrumented build's trace (issue 20, item 1): the buffer the
launcher filled (`Kernel.last_trace`) and the sidecar's "trace" entry -> Chrome trace
JSON (the Trace Event Format that chrome://tracing and ui.perfetto.dev open).

The buffer (docs/abi.md, "trace") holds `ctas * warp_groups` slices of `slots` records
of 16 bytes: {globaltimer u64 (ns), clock64 low 32 bits u32, event id u16, smid u16},
zero where nothing was written. A slice is a ring written in slot order; where it
wrapped, the oldest record follows the one place where the timer goes back.

Output: one track per (SM, warp group): `pid` = SM id, `tid` = warp group index in the
CTA (0 the producer), `ts` and `dur` in microseconds from the first stamp of the whole
trace. A begin/end pair of one span (same `span`, nested properly) becomes a complete
event (`"ph": "X"`); a stamp whose partner the ring dropped becomes an instant
(`"ph": "i"`). Each event's `args` hold the CTA, the loop and the SM cycles between its
stamps (clock64 difference, modulo 2^32). Events are sorted by (pid, tid, ts).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD = struct.Struct("<QIHH")  # globaltimer, clock64 low, event id, smid


@dataclass(frozen=True)
class Stamp:
    """One record of the buffer."""

    cta: int
    wg: int
    timer: int  # %globaltimer, ns
    clock: int  # %clock64 low 32 bits
    event: int
    smid: int


def records(buf: bytes | bytearray | memoryview, trace: Mapping[str, Any]) -> list[list[Stamp]]:
    """Per (CTA, warp group) slice, in order `cta * warp_groups + wg`, its stamps in the
    order they were written (the ring unrolled)."""
    slots, wgs, ctas = int(trace["slots"]), int(trace["warp_groups"]), int(trace["ctas"])
    size = int(trace.get("record_bytes", RECORD.size))
    if size != RECORD.size:
        raise ValueError(f"trace: record_bytes {size} is not {RECORD.size}")
    data = memoryview(bytes(buf))
    if len(data) != ctas * wgs * slots * size:
        raise ValueError(
            f"trace: the buffer has {len(data)} bytes, the sidecar says "
            f"{ctas} x {wgs} x {slots} x {size}"
        )
    out: list[list[Stamp]] = []
    for track in range(ctas * wgs):
        cta, wg = divmod(track, wgs)
        base = track * slots * size
        ring = [Stamp(cta, wg, *RECORD.unpack_from(data, base + i * size)) for i in range(slots)]
        ring = [s for s in ring if s.timer != 0]
        wrap = next((i for i in range(1, len(ring)) if ring[i].timer < ring[i - 1].timer), 0)
        out.append(ring[wrap:] + ring[:wrap])
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
    slices = records(_buffer_bytes(buf), trace)
    stamps = [s for sl in slices for s in sl]
    t0 = min((s.timer for s in stamps), default=0)
    out: list[dict[str, Any]] = []
    tracks: dict[tuple[int, int], int] = {}
    for sl in slices:
        for ev in _spans(sl, events, t0):
            out.append(ev)
            tracks.setdefault((ev["pid"], ev["tid"]), sl[0].wg if sl else 0)
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
        "otherData": {"kernel": kernel, "stamps": len(stamps), "t0_ns": t0},
    }


def _meta(name: str, pid: int, tid: int, value: str) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {"name": value}}


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
                "ts": (begin.timer - t0) / 1000.0,
                "dur": (s.timer - begin.timer) / 1000.0,
                "pid": s.smid,
                "tid": s.wg,
                "args": {
                    "cta": s.cta,
                    "loop": bev.get("loop", -1),
                    "cycles": (s.clock - begin.clock) % (1 << 32),
                },
            }
        )
    out.extend(_instant(b, bev, t0) for b, bev in open_)
    return out


def _instant(s: Stamp, ev: Mapping[str, Any], t0: int) -> dict[str, Any]:
    return {
        "name": f"{ev['name']} {ev.get('edge', '')}".strip(),
        "cat": ev.get("op", ""),
        "ph": "i",
        "s": "t",
        "ts": (s.timer - t0) / 1000.0,
        "pid": s.smid,
        "tid": s.wg,
        "args": {"cta": s.cta, "loop": ev.get("loop", -1), "clock": s.clock},
    }


def write_chrome_trace(path: str | Path, buf: Any, sidecar: Mapping[str, Any]) -> dict[str, Any]:
    """Decodes one launch's buffer with its sidecar and writes the JSON to `path`."""
    if "trace" not in sidecar:
        raise ValueError("the sidecar has no 'trace' entry: compile with --trace")
    doc = chrome_trace(buf, sidecar["trace"], sidecar.get("kernel", "kernel"))
    Path(path).write_text(json.dumps(doc))
    return doc
