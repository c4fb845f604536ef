"""The epilogue's stores from registers to global memory through shared memory.

`hopper.store_fragment` writes a fragment into a 128B-swizzled shared tile (16-bit pairs,
XOR-swizzled granules) and `hopper.tma_store` copies each warp group's rows out with
`cp.async.bulk.tensor` issued by its leader thread.
"""

from __future__ import annotations

from tawac.backend_ptx.lowering.state import KernelLowering, SmemTile, handles, wg_leader, wg_local
from tawac.diagnostics import CompileError
from tawac.dialects import hopper, ptx
from tawac.target import HOPPER


@handles(hopper.StoreFragmentOp)
def _store_fragment(k: KernelLowering, op: hopper.StoreFragmentOp) -> None:
    """Registers -> a 128B-swizzled shared tile: 16-byte granule g of row r sits at
    granule g ^ (r % 8).  In the accumulator layout r % 8 is lane / 4 for every register
    of a thread, so each thread XORs with one key, and a warp's 4-byte stores of one
    register pair hit 32 distinct banks."""
    f = k.frag(op.value)
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    layout = f.layout
    tt = t.type
    if tt.swizzle.data != 128 or tt.elem_bytes != 2 or tt.rows != layout.m or tt.cols != layout.n:
        raise CompileError(
            "convert-to-ptx: store_fragment needs a 128B-swizzled 16-bit tile "
            "of the fragment's shape",
            op,
        )
    part = k.part
    assert part is not None
    # The warp group's previous bulk store from this tile (persistent kernels) must have
    # been read before any thread writes: its issuing thread waits here, not right after
    # issuing it, so the store overlaps the next tile's main loop.
    k.guarded(wg_leader(k), lambda: k.emit(ptx.CpAsyncBulkWaitReadOp(0)))
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    k.emit(ptx.BarSyncRegOp(k.add_imm(wg_local(k), first), HOPPER.warp_group_size))
    row0, _ = k.thread_coords(layout)
    lane = k.lane()
    key = k.r(ptx.ShrOp("u32", lane, k.imm(2)))
    base = k.r(ptx.FmaOp("s32", row0, k.imm(128), t.addr))
    base = k.r(ptx.FmaOp("s32", k.r(ptx.AndOp("b32", lane, k.imm(3))), k.imm(4), base))
    xor_off = [
        k.r(ptx.ShlOp("b32", k.r(ptx.XorOp("b32", key, k.imm(g))), k.imm(4))) for g in range(8)
    ]
    for i in range(0, layout.num_regs, 2):
        dr, dc = layout.reg_offset(i)
        if dr % 8 or dc % 8 or layout.reg_offset(i + 1) != (dr, dc + 1):
            raise CompileError("convert-to-ptx: fragment layout does not pair columns", op)
        q = dc // 8
        off = dr * 128 + (q // 8) * tt.chunk_bytes
        addr = k.add(k.add_imm(base, off), xor_off[q % 8])
        k.emit(ptx.StSharedOp("b32", addr, k.r(ptx.PackB16Op(f.regs[i], f.regs[i + 1]))))
    k.emit(ptx.FenceProxyAsyncOp())


@handles(hopper.TmaStoreOp)
def _tma_store(k: KernelLowering, op: hopper.TmaStoreOp) -> None:
    t = k.vals[op.tile]
    assert isinstance(t, SmemTile)
    part = k.part
    assert part is not None and part.role == "consumer"
    tt = t.type
    rows = tt.rows // part.warp_groups
    wg = wg_local(k)
    # Named barrier first + w: the threads of warp group w have written their rows.
    first = k.barriers.get("warp group", HOPPER.max_consumer_warp_groups, preferred=1)
    bar_id = k.add_imm(wg, first)
    k.emit(ptx.BarSyncRegOp(bar_id, HOPPER.warp_group_size))
    lead = list(op.indices)[:-2]  # leading dimensions of a rank-reducing store: box 1
    name = k.params.tensor_map(op.dest, [tt.chunk_cols, rows] + [1] * len(lead), tt.swizzle.data)

    def issue() -> None:
        tmap = k.r(ptx.CvtaParamOp(k.r(ptx.ParamAddrOp(name))))
        row_off = k.r(ptx.MulOp("s32", wg, k.imm(rows), mode="lo"))
        src0 = k.r(ptx.FmaOp("s32", row_off, k.imm(128), t.addr))
        row = k.add(k.scalar(op.indices[-2]), row_off)
        col = k.scalar(op.indices[-1])
        outer = [k.scalar(i) for i in reversed(lead)]
        for c in range(tt.num_chunks):
            src = k.add_imm(src0, c * tt.chunk_bytes, "u32")
            coords = [k.add_imm(col, c * tt.chunk_cols), row, *outer]
            k.emit(ptx.CpAsyncBulkTensorStoreOp(src, tmap, coords))
        k.emit(ptx.CpAsyncBulkCommitOp())

    k.guarded(wg_leader(k), issue)
