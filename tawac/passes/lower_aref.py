"""`lower-aref`: asynchronous references to shared-memory rings and mbarriers
(Tawa section 5; the NVWS aref lowering upstream does the same).

For an aref with payload (T1..Tn) and D slots:
- one shared-memory ring per payload tile (`hopper.smem_alloc`, 1024-byte aligned, laid
  out as the 128-byte-swizzled boxes TMA writes), a `full` and an `empty` mbarrier per slot
  (`hopper.mbarrier_alloc`), initialised by one thread (full: 1 arrival, the producer's
  `expect_tx`; empty: one arrival per consumer warp), then a CTA barrier;
- `aref.put %r[%it], loads` -> slot = it mod D, phase = (it / D) & 1;
  wait `empty[slot]` with parity phase^1 (a fresh barrier passes parity 1 at once),
  `arrive.expect_tx full[slot]` with the summed bytes of the tiles, and one `tma_load`
  per tile completing on `full[slot]` (the loads must be `tile.load`s: TMA);
- `aref.get %r[%it]` -> wait `full[slot]` with parity phase; the payload is read in place
  through `hopper.smem_slot`; its users must be `tile.dot`s, which become `hopper.wgmma`;
- `aref.consumed %r[%it]` -> `hopper.mbarrier_arrive empty[slot]`.

It checks that the partitions' register budgets (`regs`, applied from the schedule by
`cooperative-consumers`) fit the register file.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile
from tawac.schedule.smem import SmemPlan
from tawac.target import HOPPER


@dataclass
class _Lowered:
    rings: list[SSAValue]
    full: SSAValue
    empty: SSAValue
    depth: int
    tx_bytes: int


def _slot_phase(it: SSAValue, depth: int) -> tuple[list[Operation], SSAValue, SSAValue]:
    """Ops computing `slot = it mod D` and `phase = (it / D) & 1`."""
    d = arith.ConstantOp.from_int_and_width(depth, IndexType())
    one = arith.ConstantOp.from_int_and_width(1, IndexType())
    slot = arith.RemUIOp(it, d.result)
    rnd = arith.DivUIOp(it, d.result)
    phase = arith.AndIOp(rnd.result, one.result)
    slot.result.name_hint = "slot"
    phase.result.name_hint = "phase"
    return [d, one, slot, rnd, phase], slot.result, phase.result


def _check_budgets(kernel: tile.KernelOp) -> None:
    """The partitions' register budgets (applied from the schedule by
    cooperative-consumers) fit the register file."""
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    unset = [p for p in parts if p.regs.data == 0]
    if unset:
        raise CompileError(
            f"lower-aref: the {unset[0].role.data} partition has no register budget; apply "
            "the schedule's roles first (plan, cooperative-consumers)",
            unset[0],
        )
    wgs = sum(p.warp_groups.data for p in parts)
    total = HOPPER.register_cap(wgs) * wgs
    used = sum(p.regs.data * p.warp_groups.data for p in parts)
    if used > total:
        raise CompileError(
            f"lower-aref: register budgets add up to {used} per thread slot over {wgs} warp "
            f"groups, more than the {total} that {HOPPER.warp_group_size * wgs} threads can hold",
            kernel,
        )


def lower_kernel(kernel: tile.KernelOp) -> None:
    body = kernel.body.block
    consumers = [
        p for p in body.ops if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    ]
    consumer_warps = 4 * sum(p.warp_groups.data for p in consumers)
    plan = SmemPlan()
    lowered: dict[SSAValue, _Lowered] = {}
    inits: list[Operation] = []
    for create in [o for o in body.ops if isinstance(o, aref.CreateOp)]:
        t = create.result.type
        assert isinstance(t, aref.ArefType)
        depth = t.depth.data
        *ring_regions, full_region, empty_region = plan.aref(t)
        rings: list[SSAValue] = []
        new_ops: list[Operation] = []
        tx = 0
        for payload, region in zip(t.payload, ring_regions, strict=True):
            assert isinstance(payload, TensorType)
            rt = hopper.smem_ring_type(payload, depth)
            alloc = hopper.SmemAllocOp(region.offset, rt)
            tx += rt.tile_type.tma_bytes
            rings.append(alloc.result)
            new_ops.append(alloc)
        full = hopper.MbarrierAllocOp(full_region.offset, depth)
        empty = hopper.MbarrierAllocOp(empty_region.offset, depth)
        full.result.name_hint = "full"
        empty.result.name_hint = "empty"
        new_ops += [full, empty]
        inits += [
            hopper.MbarrierInitOp(full.result, 1),
            hopper.MbarrierInitOp(empty.result, consumer_warps),
        ]
        Rewriter.insert_op(new_ops, InsertPoint.before(create))
        lowered[create.result] = _Lowered(rings, full.result, empty.result, depth, tx)
    if not plan.fits():
        raise CompileError(
            f"lower-aref: the aref rings need {plan.end} bytes of shared memory, more than "
            f"the {HOPPER.smem_per_block} bytes a CTA can have; use fewer stages or smaller tiles",
            kernel,
        )
    first_part = next(p for p in body.ops if isinstance(p, aref.PartitionOp))
    Rewriter.insert_op([*inits, hopper.CtaSyncOp()], InsertPoint.before(first_part))
    schedule.update(kernel, smem_bytes=plan.end)

    views: dict[SSAValue, SSAValue] = {}
    gets: list[aref.GetOp] = []
    for op in list(kernel.walk()):
        if isinstance(op, aref.PutOp):
            _lower_put(op, lowered[op.aref])
        elif isinstance(op, aref.GetOp):
            _lower_get(op, lowered[op.aref], views)
            gets.append(op)
        elif isinstance(op, aref.ConsumedOp):
            _lower_consumed(op, lowered[op.aref])
    dots: dict[tile.DotOp, None] = {}
    for get in gets:
        for v in get.values:
            for use in v.uses:
                user = use.operation
                if not isinstance(user, tile.DotOp):
                    raise CompileError(
                        f"lower-aref: a tile received through an aref feeds '{user.name}'; "
                        "only tile.dot can read shared-memory operands",
                        user,
                    )
                dots[user] = None
    for dot in dots:
        _to_wgmma(dot, views)
    for get in gets:
        Rewriter.erase_op(get)
    for create in [o for o in body.ops if isinstance(o, aref.CreateOp)]:
        Rewriter.erase_op(create)
    _check_budgets(kernel)


def _lower_put(put: aref.PutOp, low: _Lowered) -> None:
    ops, slot, phase = _slot_phase(put.index, low.depth)
    one = arith.ConstantOp.from_int_and_width(1, IndexType())
    eph = arith.XOrIOp(phase, one.result)
    ops += [
        one,
        eph,
        hopper.MbarrierWaitOp(low.empty, slot, eph.result),
        hopper.MbarrierArriveExpectTxOp(low.full, slot, low.tx_bytes),
    ]
    loads: list[tile.LoadOp] = []
    for v, ring in zip(put.values, low.rings, strict=True):
        ld = v.owner
        if not isinstance(ld, tile.LoadOp):
            raise CompileError(
                "lower-aref: an aref.put payload must come from tile.load (a TMA copy)", put
            )
        ops.append(hopper.TmaLoadOp(ld.source, list(ld.indices), ring, low.full, slot))
        loads.append(ld)
    Rewriter.insert_op(ops, InsertPoint.before(put))
    Rewriter.erase_op(put)
    for ld in loads:
        if not ld.result.uses:
            Rewriter.erase_op(ld)


def _lower_get(get: aref.GetOp, low: _Lowered, views: dict[SSAValue, SSAValue]) -> None:
    """Wait for the slot; its tiles are read in place through `smem_slot` views."""
    ops, slot, phase = _slot_phase(get.index, low.depth)
    ops.append(hopper.MbarrierWaitOp(low.full, slot, phase))
    slots = [hopper.SmemSlotOp(ring, slot) for ring in low.rings]
    for view, v in zip(slots, get.values, strict=True):
        view.result.name_hint = v.name_hint
        views[v] = view.result
    Rewriter.insert_op([*ops, *slots], InsertPoint.before(get))


def _to_wgmma(dot: tile.DotOp, views: dict[SSAValue, SSAValue]) -> None:
    """A dot whose right operand (and left, unless computed in registers) was received
    through an aref becomes a `hopper.wgmma` reading shared memory in place."""
    rhs = views.get(dot.rhs)
    if rhs is None:
        raise CompileError(
            "lower-aref: the right operand of tile.dot must be loaded (shared memory), not "
            "computed",
            dot,
        )
    lhs = views.get(dot.lhs)
    if lhs is None and dot.transpose_lhs is not None:
        raise CompileError(
            "lower-aref: a left operand computed in registers cannot be transposed", dot
        )
    # A left operand computed in registers feeds the wgmma register-A form.
    mma = hopper.WgmmaOp(lhs if lhs is not None else dot.lhs, rhs, dot.acc)
    if dot.transpose_lhs is not None:
        mma.transpose_a = dot.transpose_lhs
    if dot.transpose_rhs is None:
        mma.transpose_b = UnitAttr()
    mma.location = dot.location
    mma.result.name_hint = dot.result.name_hint
    Rewriter.replace_op(dot, mma)


def _lower_consumed(consumed: aref.ConsumedOp, low: _Lowered) -> None:
    ops, slot, _ = _slot_phase(consumed.index, low.depth)
    ops.append(hopper.MbarrierArriveOp(low.empty, slot))
    Rewriter.insert_op(ops, InsertPoint.before(consumed))
    Rewriter.erase_op(consumed)


@dataclass(frozen=True)
class LowerArefPass(ModulePass):
    name = "lower-aref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            if any(isinstance(o, aref.PartitionOp) for o in k.body.block.ops):
                lower_kernel(k)
