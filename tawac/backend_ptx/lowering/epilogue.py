"""The epilogue's tiles between registers and shared memory.

`hopper.store_fragment` writes a fragment into a 128B-swizzled shared tile (16-bit pairs,
XOR-swizzled granules) and `hopper.tma_store` copies each warp group's rows out with
`cp.async.bulk.tensor` issued by its leader thread.  `hopper.load_fragment` reads a tile
that a TMA load wrote into the registers of the accumulator layout (an epilogue's
second matrix), a pair of columns per `ld.shared`.  A tile in a `BlockedTileLayout` is
read run by run (`blocked_tiles.run_access`): one `ld.shared.v4` per 16-byte run.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    SmemTile,
    elem_ptx_type,
    handles,
    wg_leader,
    wg_local,
)
from tawac.backend_ptx.lowering.vectors import load_shared_run, load_slot_vector, slot_reads_done
from tawac.dialects import hopper, ptx
from tawac.dialects.tile import stack_of
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.blocked_tiles import BlockedTileLayout, run_access
from tawac.target.layouts import SwizzledTile


@handles(hopper.StoreFragmentOp)
def _store_fragment(k: KernelLowering, op: hopper.StoreFragmentOp) -> None:
    """Registers -> a 128B-swizzled shared tile, as `SwizzledTile.fragment_store` plans
    it: each thread XORs its granules with one key (its row modulo 8), and a warp's 4-byte
    stores of one register pair hit 32 distinct banks."""
    f = k.frag(op.value)
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    layout = f.layout
    tt = t.type
    col0 = op.first_column
    if isinstance(layout, BlockedTileLayout):
        # the planner stages only tiles of whole m64 blocks per warp group
        # (`analysis.stores.stageable`), which are in the accumulator layout
        raise CompileError(
            "convert-to-ptx: store_fragment of a tile in the blocked layout is not "
            "supported (its rows are not whole m64 blocks per warp group): store it from "
            "registers",
            op,
        )
    if (
        tt.swizzle.data != 128
        or tt.elem_bytes != 2
        or tt.rows != layout.m
        or col0 % tt.chunk_cols
        or col0 + tt.cols > layout.n
        or (tt.cols != layout.n and tt.cols % tt.chunk_cols)
    ):
        raise CompileError(
            "convert-to-ptx: store_fragment needs a 128B-swizzled 16-bit tile "
            "of the fragment's rows and of its columns or of whole chunks of them",
            op,
        )
    whole = SwizzledTile(tt.rows, layout.n, tt.elem_bytes, tt.swizzle.data)
    try:
        plan = whole.fragment_store(layout)
    except ValueError as e:
        raise CompileError(f"convert-to-ptx: {e}", op) from None
    # The pairs of the tile's chunks, at their offsets in the tile.
    first = col0 // tt.chunk_cols
    chunks = range(first, first + tt.num_chunks)
    pairs = [
        (i, off - first * whole.chunk_bytes, g)
        for i, off, g in plan.pairs
        if off // whole.chunk_bytes in chunks
    ]
    part = k.part
    assert part is not None
    # The warp group's previous bulk stores from this buffer (persistent kernels, or the
    # chunks of a staging ring) must have been read before any thread writes: its issuing
    # thread waits here, not right after issuing them, so the stores overlap other work.
    k.guarded(wg_leader(k), lambda: k.emit(ptx.CpAsyncBulkWaitReadOp(op.max_pending)))
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    k.emit(ptx.BarSyncRegOp(k.add_imm(wg_local(k), first), HOPPER.warp_group_size))
    row0, _ = k.thread_coords(layout)
    key = k.index(plan.key)
    base = k.r(ptx.FmaOp("s32", row0, k.imm(plan.row_bytes), t.addr))
    index, scale = plan.thread_byte
    base = k.r(ptx.FmaOp("s32", k.index(index), k.imm(scale), base))
    shift = plan.granule_shift
    xor_off = [
        k.r(ptx.ShlOp("b32", k.r(ptx.XorOp("b32", key, k.imm(g))), k.imm(shift)))
        for g in range(plan.granules)
    ]
    for i, off, g in pairs:
        addr = k.add(k.add_imm(base, off), xor_off[g])
        k.emit(ptx.StSharedOp("b32", addr, k.r(ptx.PackB16Op(f.regs[i], f.regs[i + 1]))))
    k.emit(ptx.FenceProxyAsyncOp())


@handles(hopper.TmaStoreOp)
def _tma_store(k: KernelLowering, op: hopper.TmaStoreOp) -> None:
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    part = k.part
    assert part is not None and part.role == "consumer"
    tt = t.type
    tile = tt.layout
    rows = tt.rows // part.warp_groups
    wg = wg_local(k)
    # Named barrier first + w: the threads of warp group w have written their rows.
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    bar_id = k.add_imm(wg, first)
    k.emit(ptx.BarSyncRegOp(bar_id, HOPPER.warp_group_size))
    lead = list(op.indices)[:-2]  # leading dimensions of a rank-reducing store: box 1
    # a stacked tile (`stack`): `per` rows of each index of dimension rank-3
    per = tt.rows // stack_of(op)
    try:
        box = tile.stacked_box(rows, per, len(lead))
    except ValueError as e:
        raise CompileError(f"convert-to-ptx: a warp group's share of the store: {e}", op) from None
    name = k.params.tensor_map(op.dest, box, tile.swizzle, op)

    def issue() -> None:
        tmap = k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name))))
        row_off = k.r(ptx.MulOp("s32", wg, k.imm(rows), mode="lo"))
        src0 = k.r(ptx.FmaOp("s32", row_off, k.imm(tile.row_bytes), t.addr))
        outer = [k.scalar(i) for i in reversed(lead)]
        if per == tt.rows:
            row = k.add(k.scalar(op.indices[-2]), row_off)
        else:  # the warp group's first row is row row_off % per of index row_off / per
            row = k.add(k.scalar(op.indices[-2]), k.r(ptx.RemOp("u32", row_off, k.imm(per))))
            outer[0] = k.add(outer[0], k.r(ptx.DivOp("u32", row_off, k.imm(per))))
        col = k.scalar(op.indices[-1])
        for offset, col0 in tile.chunks():
            src = k.add_imm(src0, offset, "u32")
            coords = [k.add_imm(col, col0), row, *outer]
            k.emit(ptx.CpAsyncBulkTensorStoreOp(src, tmap, coords))
        k.emit(ptx.CpAsyncBulkCommitOp())

    k.guarded(wg_leader(k), issue)


@handles(hopper.LoadFragmentOp)
def _load_fragment(k: KernelLowering, op: hopper.LoadFragmentOp) -> None:
    """A 128B-swizzled shared tile -> registers in the accumulator layout, as
    `SwizzledTile.fragment_load` plans it: one `ld.shared.b32` per pair of 16-bit
    elements (split into its halves), one `ld.shared.v2.f32` per pair of f32 ones; each
    thread XORs the granules with one key.  Then `vectors.slot_reads_done` (a proxy fence
    and `bar.warp.sync`): lane 0 of each warp releases the slot for the warp
    (`hopper.mbarrier_arrive`) once every lane's reads are performed.  A 1-d tile:
    `vectors.load_slot_vector`."""
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    if t.type.linear is not None and len(t.type.get_shape()) == 1:
        load_slot_vector(k, op, t)
        return
    layout = k.layout_for(op.result.type, op)  # type: ignore[arg-type]
    tt = t.type
    if tt.linear is not None:
        if not isinstance(layout, BlockedTileLayout):
            raise CompileError(
                "convert-to-ptx: a tile of a few rows is read from an unswizzled slot into "
                "the blocked layout only",
                op,
            )
        _load_row_runs(k, op, t, layout)
        return
    if isinstance(layout, BlockedTileLayout):
        _load_runs(k, op, t, layout)
        return
    try:
        dtype = elem_ptx_type(tt.element_type)
        plan = tt.layout.fragment_load(layout)
    except ValueError as e:
        raise CompileError(f"convert-to-ptx: {e}", op) from None
    row0, _ = k.thread_coords(layout)
    key = k.index(plan.key)
    base = k.r(ptx.FmaOp("s32", row0, k.imm(plan.row_bytes), t.addr))
    index, scale = plan.thread_byte
    base = k.r(ptx.FmaOp("s32", k.index(index), k.imm(scale), base))
    xor_off: dict[int, SSAValue] = {}
    regs: list[SSAValue] = []
    for i, off, g in plan.pairs:
        addr = _swizzled(k, base, off, key, g, plan.granule_shift, xor_off)
        assert len(regs) == i
        if plan.pair_bytes == 4:
            halves = ptx.UnpackB16Op(k.r(ptx.LdSharedOp("b32", addr)))
            k.emit(halves)
            regs += [halves.lo, halves.hi]
        else:
            pair = ptx.LdSharedV2Op(dtype, addr)
            k.emit(pair)
            regs += [pair.lo, pair.hi]
    slot_reads_done(k)
    k.vals[op.result] = Frag(layout, regs, dtype)


def _load_runs(
    k: KernelLowering, op: hopper.LoadFragmentOp, t: SmemTile, layout: BlockedTileLayout
) -> None:
    """A 128B-swizzled shared tile -> registers in a `BlockedTileLayout`, as
    `blocked_tiles.run_access` plans it: one access per run (`ld.shared.v4` of 16
    bytes), each thread XORing its granules with one key (and the runs 4 rows down with
    it XOR 4); then `vectors.slot_reads_done` before lane 0 releases the slot for its warp."""
    part = k.part
    assert part is not None
    try:
        dtype = elem_ptx_type(t.type.element_type)
        plan = run_access(t.type.layout, layout, part.first_wg)
    except ValueError as e:
        raise CompileError(f"convert-to-ptx: {e}", op) from None
    row0, _ = k.thread_coords(layout)
    base = k.r(ptx.FmaOp("s32", row0, k.imm(plan.row_bytes), t.addr))
    for index, scale in plan.thread:
        base = k.r(ptx.FmaOp("s32", k.index(index), k.imm(scale), base))
    key = k.index(plan.key)
    xor_off: dict[int, SSAValue] = {}
    regs: list[SSAValue] = []
    for _, off, flip in plan.runs:
        addr = _swizzled(k, base, off, key, flip, plan.granule_shift, xor_off)
        regs += load_shared_run(k, addr, plan.run_bytes, dtype)
    slot_reads_done(k)
    k.vals[op.result] = Frag(layout, regs, dtype)


def _load_row_runs(
    k: KernelLowering, op: hopper.LoadFragmentOp, t: SmemTile, layout: BlockedTileLayout
) -> None:
    """A tile of a few rows in an unswizzled slot (`LinearTile`: element (r, c) at byte
    r * row_bytes + c * elem_bytes) -> registers in a `BlockedTileLayout`: each run one
    access (`ld.shared.v4` of 16 bytes) at the thread's row and column plus the run's; a
    warp's runs in a row are consecutive, so its accesses take the fewest wavefronts.
    Then `slot_reads_done`."""
    linear = t.type.linear
    assert linear is not None and layout.m == linear.rows
    dtype = elem_ptx_type(t.type.element_type)
    run_bytes = layout.vec * linear.elem_bytes
    row0, col0 = k.thread_coords(layout)
    base = k.r(ptx.FmaOp("s32", col0, k.imm(linear.elem_bytes), t.addr))
    if linear.rows > 1:
        base = k.r(ptx.FmaOp("s32", row0, k.imm(linear.row_bytes), base))
    regs: list[SSAValue] = []
    for i in range(0, layout.num_regs, layout.vec):
        dr, dc = layout.reg_offset(i)
        off = dr * linear.row_bytes + dc * linear.elem_bytes
        regs += load_shared_run(k, k.add_imm(base, off), run_bytes, dtype)
    slot_reads_done(k)
    k.vals[op.result] = Frag(layout, regs, dtype)


def _swizzled(
    k: KernelLowering,
    base: SSAValue,
    off: int,
    key: SSAValue,
    flip: int,
    shift: int,
    xor_off: dict[int, SSAValue],
) -> SSAValue:
    """The shared address base + off of a 128B-swizzled tile, its granule the thread's
    `key` XOR `flip` (shifted by `shift`, the granule's bytes); each flip's offset made
    once per tile load (`xor_off`)."""
    if flip not in xor_off:
        swz = key if flip == 0 else k.r(ptx.XorOp("b32", key, k.imm(flip)))
        xor_off[flip] = k.r(ptx.ShlOp("b32", swz, k.imm(shift)))
    return k.add(k.add_imm(base, off), xor_off[flip])
