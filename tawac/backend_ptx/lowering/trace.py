"""The stamps of an instrumented build (`hopper.trace`, the `trace` pass).

Each partition of a traced kernel sets up, right after its `setmaxnreg`: the base of its
warp group's slice of the trace buffer (the trailing kernel parameter: slice
`ctaid_linear * warp_groups + warp group`, `slots` records of 16 bytes each), whether
this thread records (the warp group's leader, in a CTA with `ctaid_linear < ctas`),
`%smid` shifted into place, and a stamp counter (a register every stamp increments, in
every thread alike). A stamp reads `%globaltimer` and `%clock64` and the leader stores
the record {globaltimer u64, clock64 low 32 bits u32, event id u16, smid u16} with one
predicated 16-byte store at slot `counter % slots` (a ring: the last `slots` records of
each warp group survive). Predicated, not branched around: a divergent path would
serialize wgmma (ptxas C7520). docs/abi.md, "trace".
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from tawac.backend_ptx.lowering.state import KernelLowering, handles, trace_setup, wg_leader
from tawac.dialects import hopper, ptx
from tawac.target import layouts


@dataclass
class TraceState:
    """A partition's trace registers (made once, at its start)."""

    base: SSAValue  # b64: this warp group's slice of the buffer
    record: SSAValue  # pred: this thread stores
    smid_hi: SSAValue  # b64: %smid << 48
    counter: SSAValue  # b32: stamps so far (written in place)
    slots: int


@trace_setup
def setup(k: KernelLowering, table: dict) -> TraceState:
    """The trace registers of the partition being lowered."""
    slots, ctas, wgs = int(table["slots"]), int(table["ctas"]), int(table["warp_groups"])
    buf = k.r(ptx.LdParamOp("u64", k.params.trace_buffer()))
    x, y, z = (k.r(ptx.SpecialRegOp(f"ctaid.{a}")) for a in "xyz")
    nx, ny = (k.r(ptx.SpecialRegOp(f"nctaid.{a}")) for a in "xy")
    cta = k.r(ptx.FmaOp("s32", k.r(ptx.FmaOp("s32", z, ny, y)), nx, x))
    wg = k.index(layouts.WARP_GROUP)
    track = k.r(ptx.FmaOp("s32", cta, k.imm(wgs), wg))
    offset = k.r(ptx.MulOp("u32", track, k.imm(slots * 16, "u32"), mode="wide"))
    base = k.r(ptx.AddOp("s64", buf, offset))
    sampled = k.r(ptx.SetpOp("lt", "u32", cta, k.imm(ctas, "u32")))
    record = k.r(ptx.AndOp("pred", sampled, wg_leader(k)))
    smid = k.r(ptx.CvtOp("u64", "u32", k.r(ptx.SpecialRegOp("smid"))))
    smid_hi = k.r(ptx.ShlOp("b64", smid, k.imm(48, "u32")))
    counter = k.r(ptx.MovImmOp("u32", 0))
    return TraceState(base, record, smid_hi, counter, slots)


@handles(hopper.TraceOp)
def _trace(k: KernelLowering, op: hopper.TraceOp) -> None:
    part = k.part
    assert part is not None
    st = part.trace
    assert isinstance(st, TraceState), "hopper.trace in a kernel without a trace table"
    event = op.event.value.data
    timer = k.r(ptx.SpecialRegOp("globaltimer"))
    clock = k.r(ptx.SpecialRegOp("clock64"))
    slot = k.r(ptx.AndOp("b32", st.counter, k.imm(st.slots - 1, "b32")))
    addr = k.r(
        ptx.AddOp("s64", st.base, k.r(ptx.MulOp("u32", slot, k.imm(16, "u32"), mode="wide")))
    )
    low = k.r(ptx.AndOp("b64", clock, k.imm(0xFFFFFFFF, "b64")))
    tag = k.r(ptx.OrOp("b64", low, st.smid_hi))
    if event:
        tag = k.r(ptx.OrOp("b64", tag, k.imm(event << 32, "b64")))
    k.emit(ptx.StGlobalV2B64Op(addr, timer, tag, st.record))
    k.emit(ptx.AssignOp("b32", st.counter, k.r(ptx.AddOp("u32", st.counter, k.imm(1, "u32")))))
