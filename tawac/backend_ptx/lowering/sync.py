"""Shared memory, barriers and TMA loads.

Shared-memory rings and slots, mbarriers (`mbarrier.init`, `try_wait`, `arrive`,
`arrive.expect_tx`), the CTA-wide `bar.sync 0` after their init, named barriers for the
consumer partition and the ping-pong turns of its two warp groups, and TMA loads
(`cp.async.bulk.tensor` into a ring slot, completing on an mbarrier).  For clusters: the
cluster barrier, arrivals on a peer CTA's mbarrier (`mapa` + a cluster-scope arrive) and
multicast TMA loads (each CTA's band of rows into every CTA of the cluster).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from tawac.backend_ptx.lowering.state import (
    Bars,
    KernelLowering,
    Ring,
    SmemTile,
    handles,
    leading_base,
    wg_local,
)
from tawac.dialects import hopper, ptx
from tawac.dialects.tile import GlobalTensorType, stack_of
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.layouts import GRANULE_BYTES, LinearTile


@handles(hopper.SmemAllocOp)
def _smem_alloc(k: KernelLowering, op: hopper.SmemAllocOp) -> None:
    t = op.result.type
    assert isinstance(t, hopper.SmemRingType)
    k.vals[op.result] = Ring(op.offset.value.data, t)


@handles(hopper.MbarrierAllocOp)
def _mbar_alloc(k: KernelLowering, op: hopper.MbarrierAllocOp) -> None:
    t = op.result.type
    assert isinstance(t, hopper.MbarriersType)
    k.vals[op.result] = Bars(op.offset.value.data, t.count.data)


@handles(hopper.MbarrierInitOp)
def _mbar_init(k: KernelLowering, op: hopper.MbarrierInitOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    first = k.cached("tid0", lambda: k.r(ptx.SetpOp("eq", "u32", k.tid(), k.imm(0, "u32"))))

    def init() -> None:
        for i in range(bars.count):
            addr = k.add_imm(k.smem_base(), bars.offset + 8 * i, "u32")
            k.emit(ptx.MbarrierInitOp(addr, op.count.value.data))

    k.guarded(first, init)


@handles(hopper.CtaSyncOp)
def _cta_sync(k: KernelLowering, op: hopper.CtaSyncOp) -> None:
    k.emit(ptx.FenceMbarrierInitOp())
    k.emit(ptx.BarSyncOp(0))


@handles(hopper.MbarrierWaitOp)
def _mbar_wait(k: KernelLowering, op: hopper.MbarrierWaitOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    phase = k.scalar(op.phase)
    again = k.label("wait")
    k.emit(ptx.LabelOp(again))
    ready = k.r(ptx.MbarrierTryWaitOp(addr, phase))
    k.emit(ptx.BraOp(again, ready, negate=True))


@handles(hopper.MbarrierArriveOp)
def _mbar_arrive(k: KernelLowering, op: hopper.MbarrierArriveOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    lane0 = k.cached("lane0", lambda: k.r(ptx.SetpOp("eq", "u32", k.lane(), k.imm(0, "u32"))))
    k.emit(ptx.MbarrierArriveOp(addr, lane0))


@handles(hopper.MbarrierArriveRemoteOp)
def _mbar_arrive_remote(k: KernelLowering, op: hopper.MbarrierArriveRemoteOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    remote = k.r(ptx.MapaOp(addr, k.scalar(op.cta)))
    lane0 = k.cached("lane0", lambda: k.r(ptx.SetpOp("eq", "u32", k.lane(), k.imm(0, "u32"))))
    k.emit(ptx.MbarrierArriveClusterOp(remote, lane0))


@handles(hopper.ClusterSyncOp)
def _cluster_sync(k: KernelLowering, op: hopper.ClusterSyncOp) -> None:
    k.emit(ptx.BarrierClusterArriveOp())
    k.emit(ptx.BarrierClusterWaitOp())


@handles(hopper.MbarrierArriveExpectTxOp)
def _mbar_expect(k: KernelLowering, op: hopper.MbarrierArriveExpectTxOp) -> None:
    bars = k.vals[op.bars]
    assert isinstance(bars, Bars)
    addr = k.bar_addr(bars, k.scalar(op.slot))
    k.emit(ptx.MbarrierArriveExpectTxOp(addr, op.bytes.value.data))


@handles(hopper.TmaLoadOp)
def _tma_load(k: KernelLowering, op: hopper.TmaLoadOp) -> None:
    ring = k.vals[op.ring]
    bars = k.vals[op.bars]
    assert isinstance(ring, Ring) and isinstance(bars, Bars)
    tt = ring.type.tile_type
    if tt.linear is not None:
        _tma_load_linear(k, op, ring, bars)
        return
    slot = k.scalar(op.slot)
    lead = list(op.indices)[:-2]  # leading dimensions of a rank-reducing load: box 1
    tile = tt.layout
    per = tt.rows // stack_of(op)
    box = tile.stacked_box(tt.rows, per, len(lead))  # a stacked tile: box `stack` before rows
    name = k.params.tensor_map(op.source, box, tt.swizzle.data, op)
    tmap = k.cached(("tmap", name), lambda: k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name)))))
    dst0 = k.ring_slot_addr(ring, slot)
    bar = k.bar_addr(bars, slot)
    row, col = (k.scalar(i) for i in list(op.indices)[-2:])
    outer = [k.scalar(i) for i in reversed(lead)]
    policy = _load_policy(k, op)
    for offset, col0 in tile.chunks():
        dst = k.add_imm(dst0, offset, "u32")
        coords = [k.add_imm(col, col0), row, *outer]
        k.emit(ptx.CpAsyncBulkTensorLoadOp(dst, tmap, bar, coords, policy))


def _load_policy(k: KernelLowering, op: hopper.TmaLoadOp) -> SSAValue | None:
    """The cache policy of a copy's `l2` priority (None without one); under `l2_if`, that
    priority where it holds and the normal one elsewhere (`selp`)."""
    policy = k.l2_policy(op.l2.data if op.l2 is not None else None)
    if policy is None or op.l2_if is None:
        return policy
    normal = k.l2_policy("evict_normal")
    assert normal is not None
    return k.r(ptx.SelpOp("b64", policy, normal, k.scalar(op.l2_if)))


def _tma_load_linear(k: KernelLowering, op: hopper.TmaLoadOp, ring: Ring, bars: Bars) -> None:
    """A 1-d tile, or a 2-d tile of a few rows (`LinearTile`): per row, one copy per box
    of up to 256 elements, unswizzled, at its byte offset of the slot (row r `row_bytes`
    further); the leading coordinates (a row of a rank-2 tensor, the 2-d tile's row among
    them, plus r) take one element each."""
    tile = ring.type.tile_type.linear
    assert tile is not None
    lead = list(op.indices)[:-1]
    name = k.params.tensor_map(op.source, tile.tma_box(len(lead)), 0, op)
    tmap = k.cached(("tmap", name), lambda: k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name)))))
    slot = k.scalar(op.slot)
    dst0 = k.ring_slot_addr(ring, slot)
    bar = k.bar_addr(bars, slot)
    col = k.scalar(list(op.indices)[-1])
    outer = [k.scalar(i) for i in reversed(lead)]
    policy = _load_policy(k, op)

    def row_coords(r: int) -> list[SSAValue]:
        """The leading coordinates of row r of the tile: its row index plus r."""
        if r == 0:
            return outer
        return [k.add_imm(outer[0], r), *outer[1:]]

    def boxes() -> None:
        for r in range(tile.rows):
            coords_r = row_coords(r)
            for offset, col0 in tile.chunks():
                dst = k.add_imm(dst0, r * tile.row_bytes + offset, "u32")
                coords = [k.add_imm(col, col0), *coords_r]
                k.emit(ptx.CpAsyncBulkTensorLoadOp(dst, tmap, bar, coords, policy))

    if tile.num_chunks == 1:
        boxes()
        return
    # inside the tensor: each row as one bulk copy; else the boxes (TMA fills the part
    # outside with zeros)
    inside = _linear_inside(k, op, tile.n, tile.rows)
    per = GRANULE_BYTES // tile.elem_bytes  # the column a whole 16 bytes in
    whole = k.r(ptx.AndOp("b32", col, k.imm(per - 1)))
    aligned = k.r(ptx.SetpOp("eq", "s32", whole, k.imm(0)))
    inside = k.r(ptx.AndOp("pred", inside, aligned))

    def bulk() -> None:
        for r in range(tile.rows):
            dst = k.add_imm(dst0, r * tile.row_bytes, "u32") if r else dst0
            _bulk_copy(k, op, tile, dst, bar, col, policy, row=r)

    k.guarded(inside, bulk)
    k.guarded(inside, boxes, negate=True)


def _linear_inside(k: KernelLowering, op: hopper.TmaLoadOp, n: int, rows: int = 1) -> SSAValue:
    """Whether the `rows` x `n` elements a linear tile loads lie inside the tensor: every
    index at least 0 (a program may start a tile before its tensor: TMA fills that part
    with zeros), the last index plus n within the last dimension, the one before plus
    `rows` within its own, every other leading index within its own."""
    gt = op.source.type
    assert isinstance(gt, GlobalTensorType)
    indices = list(op.indices)
    last = gt.rank - 1
    ok = None
    for d, idx in enumerate(indices):
        size = k.r(ptx.LdParamOp("s32", k.params.dim(op.source, d)))
        start = k.scalar(idx)
        extent = n if d == last else rows if d == last - 1 else 1
        at = k.add_imm(start, extent)
        fits = k.r(ptx.SetpOp("le", "s32", at, size))
        after = k.r(ptx.SetpOp("ge", "s32", start, k.imm(0)))
        both = k.r(ptx.AndOp("pred", fits, after))
        ok = both if ok is None else k.r(ptx.AndOp("pred", ok, both))
    assert ok is not None
    return ok


def _bulk_copy(
    k: KernelLowering,
    op: hopper.TmaLoadOp,
    tile: LinearTile,
    dst: SSAValue,
    bar: SSAValue,
    col: SSAValue,
    policy: SSAValue | None = None,
    row: int = 0,
) -> None:
    """Row `row` of a linear tile inside its tensor as one `cp.async.bulk` (no tensor
    map, no box limit): its bytes are contiguous in global memory, from a 16-byte aligned
    address (the tensor has a tensor map, so the launcher gives it a 16-byte aligned base
    and outer strides, a padded copy where the caller's breaks that, docs/abi.md; the
    column a whole 16 bytes in, tested by the caller)."""
    gt = op.source.type
    assert isinstance(gt, GlobalTensorType)
    last = gt.rank - 1
    base = leading_base(k, op.source, list(op.indices), last, tile.elem_bytes)
    if row:
        # row `row` of the tile: the row dimension's stride (elements) times row further
        stride = k.r(ptx.LdParamOp("s64", k.params.stride(op.source, last - 1)))
        step = k.r(ptx.MulOp("s64", stride, k.imm(row * tile.elem_bytes, "s64"), mode="lo"))
        base = k.r(ptx.AddOp("s64", base, step))
    off = k.r(ptx.MulOp("s32", col, k.imm(tile.elem_bytes), mode="wide"))
    src = k.r(ptx.AddOp("s64", base, off))
    k.emit(ptx.CpAsyncBulkLoadOp(dst, src, tile.row_bytes, bar, policy))


@handles(hopper.TmaLoadMulticastOp)
def _tma_load_multicast(k: KernelLowering, op: hopper.TmaLoadMulticastOp) -> None:
    """Band `rank` of the tile's rows (`SwizzledTile.row_band`), per column chunk, into
    the same offsets of every CTA of the cluster (ctaMask: all of them); the leading
    coordinates of a tensor of rank > 2 take one element (box 1), as in `_tma_load`."""
    ring = k.vals[op.ring]
    bars = k.vals[op.bars]
    assert isinstance(ring, Ring) and isinstance(bars, Bars)
    tt = ring.type.tile_type
    if tt.linear is not None:
        # an unswizzled tile (1-d, or a few rows) has no row bands of the swizzled layout
        raise CompileError(
            "convert-to-ptx: a 1-d tile or a tile of fewer than 8 rows is not multicast "
            "to a cluster yet; compile without --cluster",
            op,
        )
    ctas = op.ctas.value.data
    tile = tt.layout
    rows, band_bytes = tile.row_band(ctas)
    lead = list(op.indices)[:-2]
    box = tile.tma_box(rows) + [1] * len(lead)
    name = k.params.tensor_map(op.source, box, tt.swizzle.data, op)
    tmap = k.cached(("tmap", name), lambda: k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name)))))
    rank = k.scalar(op.rank)
    mask = k.imm((1 << ctas) - 1, "b16")
    slot = k.scalar(op.slot)
    dst0 = k.r(ptx.FmaOp("s32", rank, k.imm(band_bytes), k.ring_slot_addr(ring, slot)))
    bar = k.bar_addr(bars, slot)
    row0, col = (k.scalar(i) for i in list(op.indices)[-2:])
    row = k.r(ptx.FmaOp("s32", rank, k.imm(rows), row0))
    outer = [k.scalar(i) for i in reversed(lead)]
    for offset, col0 in tile.chunks():
        dst = k.add_imm(dst0, offset, "u32")
        coords = [k.add_imm(col, col0), row, *outer]
        k.emit(ptx.CpAsyncBulkTensorLoadMulticastOp(dst, tmap, bar, mask, coords))


@handles(hopper.SmemSlotOp)
def _smem_slot(k: KernelLowering, op: hopper.SmemSlotOp) -> None:
    ring = k.vals[op.ring]
    assert isinstance(ring, Ring)
    k.vals[op.result] = SmemTile(k.ring_slot_addr(ring, k.scalar(op.slot)), ring.type.tile_type)


@handles(hopper.ConsumerSyncOp)
def _consumer_sync(k: KernelLowering, op: hopper.ConsumerSyncOp) -> None:
    part = k.part
    assert part is not None
    bar = k.barriers.get("consumer partition", preferred=HOPPER.named_barriers - 1)
    k.emit(ptx.BarSyncOp(bar, HOPPER.warp_group_size * part.warp_groups))


@handles(hopper.TurnOp)
def _turn(k: KernelLowering, op: hopper.TurnOp) -> None:
    part = k.part
    assert part is not None
    if part.warp_groups != 2:
        raise CompileError("convert-to-ptx: ping-pong turns need two consumer warp groups", op)
    turn = k.barriers.get("ping-pong turns", 2, preferred=8)  # one per consumer warp group
    wg = wg_local(k)
    mine = k.add_imm(wg, turn)
    other = k.r(ptx.SubOp("s32", k.imm(turn + 1), wg))  # turn + (1 - wg)
    kind = op.kind.data
    if kind == "wait":
        k.emit(ptx.BarSyncRegOp(mine, 2 * HOPPER.warp_group_size))
    elif kind == "pass":
        k.emit(ptx.BarArriveRegOp(other, 2 * HOPPER.warp_group_size))
    else:
        # init: warp group 1 hands the first turn to 0; end: 0 takes the last one back.
        first = k.r(ptx.SetpOp("eq", "s32", wg, k.imm(1 if kind == "init" else 0)))
        bar = k.imm(turn)
        emit = ptx.BarArriveRegOp if kind == "init" else ptx.BarSyncRegOp
        k.guarded(first, lambda: k.emit(emit(bar, 2 * HOPPER.warp_group_size)))
