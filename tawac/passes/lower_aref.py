"""`lower-aref`: asynchronous references to shared-memory rings and mbarriers
(Tawa section 5; the NVWS aref lowering upstream does the same).

For an aref with payload (T1..Tn) and D slots:
- one shared-memory ring per payload tile (`hopper.smem_alloc`, 1024-byte aligned, laid
  out as the 128-byte-swizzled boxes TMA writes; a 1-d tile unswizzled, its elements in
  order, `LinearTile`), a `full` and an `empty` mbarrier per slot
  (`hopper.mbarrier_alloc`), initialised by one thread (full: 1 arrival, the producer's
  `expect_tx`; empty: one arrival per consumer warp), then a CTA barrier;
- `aref.put %r[%it], loads` -> slot = it mod D, phase = (it / D) & 1;
  wait `empty[slot]` with parity phase^1 (a fresh barrier passes parity 1 at once),
  `arrive.expect_tx full[slot]` with the summed bytes of the tiles, and one `tma_load`
  per tile completing on `full[slot]` (the loads must be `tile.load`s: TMA);
- `aref.get %r[%it]` -> wait `full[slot]` with parity phase (none for a get `again`:
  an earlier get of the block waited for the transfer); the payload is read in place
  through `hopper.smem_slot`: a tile read as `tile.dot` A or B operands by wgmma (the dots
  become `hopper.wgmma`), any other tile (an epilogue's C, read by consumer math) into the
  registers of the accumulator layout (a 1-d tile: of its vector layout) by
  `hopper.load_fragment` right after the wait;
- `aref.consumed %r[%it]` -> `hopper.mbarrier_arrive empty[slot]`.

A put or a release with `when %p` becomes the same ops under `scf.if %p`.

With a cluster of C CTAs in the schedule (docs/design/passes.md): `empty` counts the
consumer warps of all C CTAs and each consumer warp also arrives on the same barrier of
every peer (`hopper.mbarrier_arrive_remote`), since the peers' multicast copies write
into this CTA's slot (the remote arrivals and the producer's wait on `empty` use CTA
scope semantics, as CUTLASS's cluster pipelines do: cluster scope put a `MEMBAR.ALL.GPU`
in every K step, docs/perf.md); the aref's `multicast` payloads become
`hopper.tma_load_multicast` (each CTA its band of rows, into every CTA's slot; `full`
still expects the whole payload); the inits are followed by a cluster barrier
(`hopper.cluster_sync`), and every partition ends with one.

It needs every partition's register budget (`regs`, applied from the schedule by
`cooperative-consumers`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.arefs import read_by_math
from tawac.analysis.mma import is_mma_operand
from tawac.dialects import aref, hopper, tile
from tawac.schedule.smem import SmemPlan
from tawac.support.diagnostics import CompileError


@dataclass
class _Lowered:
    rings: list[SSAValue]
    full: SSAValue
    empty: SSAValue
    depth: int
    tx_bytes: int
    cluster: _Cluster | None = None
    multicast: tuple[int, ...] = ()


@dataclass
class _Cluster:
    """The CTA's rank in its cluster of `ctas` CTAs and the ranks of its peers."""

    ctas: int
    rank: SSAValue
    peers: list[SSAValue]


def _cluster_ops(ctas: int) -> tuple[list[Operation], _Cluster]:
    """The cluster barrier after the mbarrier inits, the CTA's rank and its peers'
    ranks (rank + d) mod ctas."""
    rank = hopper.ClusterCtaRankOp()
    rank.result.name_hint = "rank"
    n = arith.ConstantOp.from_int_and_width(ctas, IndexType())
    ops: list[Operation] = [hopper.ClusterSyncOp(), rank, n]
    peers: list[SSAValue] = []
    for d in range(1, ctas):
        c = arith.ConstantOp.from_int_and_width(d, IndexType())
        add = arith.AddiOp(rank.result, c.result)
        peer = arith.RemUIOp(add.result, n.result)
        peer.result.name_hint = "peer"
        ops += [c, add, peer]
        peers.append(peer.result)
    return ops, _Cluster(ctas, rank.result, peers)


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


def _ring_sizes(kernel: tile.KernelOp) -> str:
    """Each aref's rings: depth, payload, bytes, and whether consumer math reads them
    (an epilogue's tile), for the diagnostic of a plan that does not fit."""
    out = []
    for n, create in enumerate(o for o in kernel.walk() if isinstance(o, aref.CreateOp)):
        t = create.aref_type
        depth = t.depth.data
        size = sum(hopper.ring_bytes(hopper.smem_ring_type(p, depth)) for p in t.payload)  # type: ignore[arg-type]
        payload = ", ".join(tile.type_str(p) for p in t.payload)  # type: ignore[arg-type]
        math = read_by_math(create)
        name = create.result.name_hint or f"aref{n}"
        what = ", read by consumer math" if math else ""
        out.append(f"{name}: {depth} x {payload}{what}: {size} bytes")
    return "; ".join(out)


def _check_budgets(kernel: tile.KernelOp) -> None:
    """Every partition has its register budget (applied from the schedule by
    cooperative-consumers; that the budgets fit the register file is `plan`'s check)."""
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    unset = [p for p in parts if p.regs.data == 0]
    if unset:
        raise CompileError(
            f"lower-aref: the {unset[0].role.data} partition has no register budget; apply "
            "the schedule's roles first (plan, cooperative-consumers)",
            unset[0],
        )


def lower_kernel(kernel: tile.KernelOp) -> None:
    body = kernel.body.block
    # a CTA that runs one program ran none before it (`persistent` replaced the ordinals
    # of a kernel that loops over programs)
    for ordinal in [o for o in kernel.walk() if isinstance(o, aref.OrdinalOp)]:
        Rewriter.replace_op(ordinal, arith.ConstantOp.from_int_and_width(0, IndexType()))
    consumers = [
        p for p in body.ops if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    ]
    consumer_warps = 4 * sum(p.warp_groups.data for p in consumers)
    # A cluster's CTAs multicast into each other's rings: a slot is free again when the
    # consumers of every CTA released it (each arrives on its own and its peers' empty).
    sched = schedule.of(kernel)
    ctas = sched.cluster_size
    cluster_ops, cluster = _cluster_ops(ctas) if ctas > 1 else ([], None)
    plan = SmemPlan(ctas=sched.ctas_per_sm)
    lowered: dict[SSAValue, _Lowered] = {}
    inits: list[Operation] = []
    creates = [o for o in body.ops if isinstance(o, aref.CreateOp)]
    regions = plan.arefs([(c.aref_type, None) for c in creates])
    for create, (ring_regions, full_region, empty_region) in zip(creates, regions, strict=True):
        t = create.aref_type
        depth = t.depth.data
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
        inits.append(hopper.MbarrierInitOp(full.result, 1))
        # an aref with multicast payloads is shared by the cluster; the others stay
        # private to each CTA
        decided = sched.aref(create.ident)
        multicast = decided.multicast if decided is not None else ()
        shared = cluster if multicast else None
        inits.append(hopper.MbarrierInitOp(empty.result, consumer_warps * (ctas if shared else 1)))
        Rewriter.insert_op(new_ops, InsertPoint.before(create))
        lowered[create.result] = _Lowered(
            rings, full.result, empty.result, depth, tx, shared, multicast
        )
    if not plan.fits():
        raise CompileError(
            f"lower-aref: the aref rings need {plan.end} bytes of shared memory, more than "
            f"{plan.limit_text()}; use fewer stages or smaller tiles ({_ring_sizes(kernel)})",
            kernel,
        )
    first_part = next(p for p in body.ops if isinstance(p, aref.PartitionOp))
    Rewriter.insert_op([*inits, hopper.CtaSyncOp(), *cluster_ops], InsertPoint.before(first_part))
    if cluster is not None:
        # No CTA exits while a peer may still write into its rings or arrive on its
        # barriers: every partition ends at a cluster barrier (all of its threads).
        for part in [p for p in body.ops if isinstance(p, aref.PartitionOp)]:
            part.body.block.add_op(hopper.ClusterSyncOp())
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
            uses = list(v.uses)
            if uses and not any(is_mma_operand(u) for u in uses):
                _to_registers(v, views[v])
                continue
            for use in uses:
                user = use.operation
                if not is_mma_operand(use):
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
    for i, (v, ring) in enumerate(zip(put.values, low.rings, strict=True)):
        ld = v.owner
        if not isinstance(ld, tile.LoadOp):
            raise CompileError(
                "lower-aref: an aref.put payload must come from tile.load (a TMA copy)", put
            )
        stacked = tile.stack_of(ld) > 1
        if stacked and low.cluster is not None and i in low.multicast:
            raise CompileError(
                "lower-aref: a stacked tile (tile.load ... stack) cannot be multicast to a "
                "cluster yet; compile with --cluster 1x1",
                ld,
            )
        if low.cluster is not None and i in low.multicast:
            # each CTA copies its band of rows into every CTA's slot: the whole tile
            # lands in each, as the expect_tx above counts
            c = low.cluster
            load = hopper.TmaLoadMulticastOp(
                ld.source, list(ld.indices), ring, low.full, slot, c.rank, c.ctas
            )
            ops.append(load)
        else:
            l2 = put.l2.data if put.l2 is not None else None
            ops.append(
                hopper.TmaLoadOp(
                    ld.source,
                    list(ld.indices),
                    ring,
                    low.full,
                    slot,
                    tile.stack_of(ld),
                    l2,
                    put.l2_if,
                )
            )
        loads.append(ld)
    Rewriter.insert_op(_when(put.when, ops), InsertPoint.before(put))
    Rewriter.erase_op(put)
    for ld in loads:
        if not ld.result.uses:
            Rewriter.erase_op(ld)


def _when(pred: SSAValue | None, ops: list[Operation]) -> list[Operation]:
    """`ops`, or, for a put or release with `when %p`, `ops` under `scf.if %p`."""
    if pred is None:
        return ops
    return [scf.IfOp(pred, [], Region(Block([*ops, scf.YieldOp()])))]


def _lower_get(get: aref.GetOp, low: _Lowered, views: dict[SSAValue, SSAValue]) -> None:
    """Wait for the slot; its tiles are read in place through `smem_slot` views."""
    ops, slot, phase = _slot_phase(get.index, low.depth)
    if get.again is None:  # `again`: an earlier get of the block waited for this transfer
        ops.append(hopper.MbarrierWaitOp(low.full, slot, phase))
    slots = [hopper.SmemSlotOp(ring, slot) for ring in low.rings]
    for view, v in zip(slots, get.values, strict=True):
        view.result.name_hint = v.name_hint
        views[v] = view.result
    Rewriter.insert_op([*ops, *slots], InsertPoint.before(get))


def _to_registers(value: SSAValue, view: SSAValue) -> None:
    """A tile received through an aref and read by consumer math (not by a dot): every
    thread reads its registers of the slot (`hopper.load_fragment`) right after the slot
    is full; the slot is released by the `aref.consumed` after the math's first reads."""
    load = hopper.LoadFragmentOp(view, value.type)
    load.result.name_hint = value.name_hint
    if isinstance(value.owner, Operation):
        load.location = value.owner.location
    owner = view.owner
    assert isinstance(owner, Operation)
    Rewriter.insert_op(load, InsertPoint.after(owner))
    value.replace_all_uses_with(load.result)


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
    if low.cluster is not None:
        ops += [hopper.MbarrierArriveRemoteOp(low.empty, slot, p) for p in low.cluster.peers]
    Rewriter.insert_op(_when(consumed.when, ops), InsertPoint.before(consumed))
    Rewriter.erase_op(consumed)


@dataclass(frozen=True)
class LowerArefPass(ModulePass):
    name = "lower-aref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            if any(isinstance(o, aref.PartitionOp) for o in k.body.block.ops):
                lower_kernel(k)
