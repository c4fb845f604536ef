"""Column reductions: `tile.reduce <kind> %t, 0` of a 2-d f32 tile in the accumulator
layout (or a `BlockedTileLayout`), to the column vector (the dim-1 slice: every thread
holds the values of its columns, as a broadcast along rows reads them).

A column's values are spread over the thread's registers of that column, the eight lanes
of a warp that share `lane % 4` (the rows `lane / 4` and `lane / 4 + 8` of each 16-row
slice; in a blocked layout the lanes of equal lane % col_lanes) and every warp of the
partition. The lowering folds the thread's registers of each column (a balanced tree),
then the lanes (`shfl.sync.bfly` 4, 8, 16; the layout's `column_reduction_lanes`), then
the warps through shared scratch: the first row's lanes of each warp (0-3) write the
warp's partial of their columns to row `band` of a (bands x N) f32 table between two
`bar.sync`s of the consumer partition (a band: the warps side by side along the rows,
warp / col_warps; each holds other columns, so a column has one partial a band), and
every thread adds the table's rows of its columns in the same order, so the result is
the same in every thread that holds a column (a deterministic sum). A tile whose warps
are all side by side (one band: a row, or a few in each warp's lanes, over one warp
group) holds each column in one warp and needs no scratch and no barrier: the lanes'
shuffles leave the sum in every lane holding it.
"""

from __future__ import annotations

from tawac.backend_ptx.lowering.state import Frag, KernelLowering, combiner, tree
from tawac.dialects import ptx, tile
from tawac.schedule.smem import reduce_scratch_bytes
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.blocked_tiles import BlockedTileLayout
from tawac.target.layouts import AccLayout, Shr, warp_in_partition


def reduce_columns(k: KernelLowering, op: tile.ReduceOp, src: Frag) -> None:
    """The column vector of `src` (module docstring)."""
    part = k.part
    assert part is not None
    layout = src.layout
    if not isinstance(layout, AccLayout | BlockedTileLayout):
        raise CompileError("convert-to-ptx: tile.reduce along 0 needs a 2-d tile", op)
    combine = combiner(k, op.kind.data)
    offsets = layout.reg_offsets()
    cols = layout.col_offsets()
    partial = []
    for dc in cols:
        acc = tree([src.regs[i] for i, (_, c) in enumerate(offsets) if c == dc], combine)
        for mask in layout.column_reduction_lanes():
            acc = combine(acc, k.r(ptx.ShflBflyOp(acc, mask)))
        partial.append(acc)
    warps = layout.warp_groups * HOPPER.warp_group_size // HOPPER.warp_size
    n = layout.n
    # warps side by side along the rows hold other columns: a column's partials are those
    # of one warp a band (warp / col_warps), so the table has a row per band
    cw = layout.col_warps if isinstance(layout, BlockedTileLayout) else 1
    bands = warps // cw
    if bands == 1:
        # every warp side by side (a row, or a few in each warp's lanes, over one warp
        # group): each column lies in one warp, whose shuffles left its sum in every
        # lane holding it
        k.vals[op.result] = Frag(layout, partial, "f32", 1)
        return
    assert reduce_scratch_bytes(op, warps) >= 4 * bands * n, (op, layout)
    scratch = k.scratch(4 * bands * n, op)
    _, col0 = k.thread_coords(layout)
    base = k.r(ptx.FmaOp("s32", col0, k.imm(4), scratch))  # this thread's column 0
    band = warp_in_partition(part.first_wg)
    if cw > 1:
        band = Shr(band, cw.bit_length() - 1)
    row = k.r(ptx.FmaOp("s32", k.index(band), k.imm(4 * n), base))
    writer = k.r(ptx.SetpOp("lt", "u32", k.lane(), k.imm(layout.first_row_lanes, "u32")))

    def write() -> None:
        for dc, value in zip(cols, partial, strict=True):
            k.emit(ptx.StSharedOp("f32", k.add_imm(row, 4 * dc, "u32"), value))

    k.exchange(layout.warp_groups * HOPPER.warp_group_size, writer, write)
    regs = []
    for dc in cols:
        parts = [
            k.r(ptx.LdSharedOp("f32", k.add_imm(base, 4 * (b * n + dc), "u32")))
            for b in range(bands)
        ]
        regs.append(tree(parts, combine))
    k.vals[op.result] = Frag(layout, regs, "f32", 1)
