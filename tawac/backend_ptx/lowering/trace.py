"""The stamps of an instrumented build (`hopper.trace`, the `trace` pass).

The buffer (the trailing kernel parameter; docs/abi.md, "trace") holds one ring of
`slots` records of 16 bytes per (CTA, warp group), track `ctaid_linear * warp_groups +
warp group`, then each track's two sync records. A partition's trace state is one 32-bit
register, `pos`, set up right after its `setmaxnreg`: the byte offset of the ring slot
its next record goes to, with bit 0 set where this thread does not record (only the
warp group's leader, in a CTA with `ctaid_linear < ctas`, does). One register because
the producer runs on 24: the buffer's address is read from the parameter at each stamp
(a constant-bank operand) and `%smid` likewise. The sync records, at the partition's
start and end, are {%globaltimer low, high, %clock, event | smid << 16}: they map the
cycles of the other stamps to nanoseconds. Every other stamp reads the 32-bit `%clock`
only (one register) and the leader stores {%clock, iteration, 0, event | smid << 16} with
one predicated 16-byte store at `pos`, which then moves to the next slot of the ring
(wrapping: the last `slots` records survive). `iteration` is the loop's induction
variable / its step where that is a constant power of two, else (in a sampled loop) a
counter register of the loop's own, else 0. Inside a sampled loop (the pass's `every`)
the store also asks that the iteration be a multiple of `every`, so most iterations
store nothing. Predicated, not branched around: a divergent path would serialize wgmma
(ptxas C7520).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from tawac.backend_ptx.lowering.state import KernelLowering, handles, trace_setup, wg_leader
from tawac.dialects import hopper, ptx
from tawac.target import layouts

#: Sync records per track, after all the rings.
SYNC_RECORDS = 2


@dataclass
class TraceState:
    """A partition's trace state (made once, at its start)."""

    pos: SSAValue  # u32: byte offset of the next record | 1 where this thread is idle
    slots: int
    tracks: int  # CTAs that record x warp groups: the rings before the sync records
    every: int
    events: list[dict]
    iterations: dict[int, SSAValue] = field(default_factory=dict)  # loop -> b32 count

    @property
    def ring_bytes(self) -> int:
        return self.slots * 16

    def finish(self, k: KernelLowering) -> None:
        """The partition's closing sync record (before its `exit`)."""
        _sync(k, self, 1)


@trace_setup
def setup(k: KernelLowering, table: dict) -> TraceState:
    """The trace registers of the partition being lowered, and its opening sync record."""
    part = k.part
    assert part is not None
    slots, ctas, wgs = int(table["slots"]), int(table["ctas"]), int(table["warp_groups"])
    x, y, z = (k.r(ptx.SpecialRegOp(f"ctaid.{a}")) for a in "xyz")
    nx, ny = (k.r(ptx.SpecialRegOp(f"nctaid.{a}")) for a in "xy")
    cta = k.r(ptx.FmaOp("s32", k.r(ptx.FmaOp("s32", z, ny, y)), nx, x))
    wg = k.index(layouts.WARP_GROUP)
    track = k.r(ptx.FmaOp("s32", cta, k.imm(wgs), wg))
    sampled = k.r(ptx.SetpOp("lt", "u32", cta, k.imm(ctas, "u32")))
    record = k.r(ptx.AndOp("pred", sampled, wg_leader(k)))
    idle = k.r(ptx.SelpOp("u32", k.imm(0, "u32"), k.imm(1, "u32"), record))
    pos = k.r(ptx.FmaOp("u32", track, k.imm(slots * 16, "u32"), idle))
    events = list(table["events"])
    st = TraceState(pos, slots, ctas * wgs, int(table.get("every", 1)), events)
    for ev in events:
        if ev.get("wg") != part.first_wg or ev["op"] != "iteration" or ev["edge"] == "end":
            continue
        if ev.get("step") or not ev.get("sampled"):
            continue  # counted by the induction variable, or not at all
        st.iterations[ev["loop"]] = k.r(ptx.MovImmOp("u32", 0))
    _sync(k, st, 0)
    return st


def _sync(k: KernelLowering, st: TraceState, event: int) -> None:
    """Sync record `event` (0 at the start, 1 at the end) of this track, after all the
    rings: {%globaltimer low and high words, %clock, event | smid << 16}."""
    timer = k.r(ptx.SpecialRegOp("globaltimer"))
    lo = k.r(ptx.CvtOp("u32", "u64", timer))
    hi = k.r(ptx.CvtOp("u32", "u64", k.r(ptx.ShrOp("b64", timer, k.imm(32, "u32")))))
    clock = k.r(ptx.SpecialRegOp("clock"))
    shift = (st.ring_bytes // 32).bit_length() - 1  # ring offset -> track * 32
    track32 = k.r(ptx.ShrOp("b32", st.pos, k.imm(shift, "u32")))
    track32 = k.r(ptx.AndOp("b32", track32, k.imm(~31 & 0xFFFFFFFF, "b32")))
    base = st.tracks * st.ring_bytes + 16 * event
    offset = k.r(ptx.AddOp("u32", track32, k.imm(base, "u32")))
    values = (lo, hi, clock, _tag(k, event))
    idle = _idle(k, st)
    k.emit(ptx.StGlobalV4B32Op(_address(k, offset), values, _stores(k, idle)))


def _idle(k: KernelLowering, st: TraceState) -> SSAValue:
    """1 where this thread does not record (bit 0 of `pos`), else 0."""
    return k.r(ptx.AndOp("b32", st.pos, k.imm(1, "b32")))


def _tag(k: KernelLowering, event: int) -> SSAValue:
    """The record's last word: event id | %smid << 16 (`%smid` read here)."""
    smid = k.r(ptx.ShlOp("b32", k.r(ptx.SpecialRegOp("smid")), k.imm(16, "u32")))
    return k.r(ptx.OrOp("b32", smid, k.imm(event, "b32"))) if event else smid


def _iteration(k: KernelLowering, op: hopper.TraceOp, step: int) -> SSAValue:
    """The iteration of the loop around `op`: its induction variable / `step` (no
    register of the trace's own carried through the loop)."""
    loop = op.parent_op()
    assert isinstance(loop, scf.ForOp), "an iteration tick outside its loop"
    iv = k.vals[loop.body.block.args[0]]
    assert isinstance(iv, SSAValue)
    return k.r(ptx.ShrOp("b32", iv, k.imm(step.bit_length() - 1, "u32")))


def _stores(k: KernelLowering, skip: SSAValue) -> SSAValue:
    """The predicate of a record's store: `skip` is 0 (made at the store: a predicate
    held across the kernel would take one of the few predicate registers)."""
    return k.r(ptx.SetpOp("eq", "u32", skip, k.imm(0, "u32")))


def _address(k: KernelLowering, offset: SSAValue) -> SSAValue:
    """The buffer's address (the parameter, read here) plus a 32-bit byte offset."""
    buf = k.r(ptx.LdParamOp("u64", k.params.trace_buffer()))
    return k.r(ptx.AddOp("s64", buf, k.r(ptx.CvtOp("u64", "u32", offset))))


@handles(hopper.TraceOp)
def _trace(k: KernelLowering, op: hopper.TraceOp) -> None:
    part = k.part
    assert part is not None
    st = part.trace
    assert isinstance(st, TraceState), "hopper.trace in a kernel without a trace table"
    event = op.event.value.data
    ev = st.events[event]
    loop = ev.get("loop", -1)
    count = st.iterations.get(loop)
    if count is not None and ev["op"] == "iteration" and ev["edge"] in ("begin", "at"):
        k.emit(ptx.AssignOp("b32", count, k.r(ptx.AddOp("u32", count, k.imm(1, "u32")))))
    step = int(ev.get("step", 0))
    if step:
        count = _iteration(k, op, step)
    idle = _idle(k, st)
    skip = idle
    if ev.get("sampled") and count is not None and st.every > 1:
        phase = k.r(ptx.AndOp("b32", count, k.imm(st.every - 1, "b32")))
        skip = k.r(ptx.OrOp("b32", phase, idle))
    store = _stores(k, skip)
    clock = k.r(ptx.SpecialRegOp("clock"))
    offset = k.r(ptx.AndOp("b32", st.pos, k.imm(~15 & 0xFFFFFFFF, "b32")))
    iteration = count if count is not None else k.imm(0, "u32")
    values = (clock, iteration, k.imm(0, "u32"), _tag(k, event))
    k.emit(ptx.StGlobalV4B32Op(_address(k, offset), values, store))
    # the next slot of the ring (the idle bit is below the slot bits: it stays)
    wrap = st.ring_bytes - 1
    within = k.r(
        ptx.AndOp("b32", k.r(ptx.AddOp("u32", st.pos, k.imm(16, "u32"))), k.imm(wrap, "b32"))
    )
    ring = k.r(ptx.AndOp("b32", st.pos, k.imm(~wrap & 0xFFFFFFFF, "b32")))
    moved = k.r(ptx.OrOp("b32", ring, within))
    k.emit(ptx.AssignOp("b32", st.pos, k.r(ptx.SelpOp("u32", moved, st.pos, store))))
