"""Column reductions: `tile.reduce <kind> %t, 0` of a 2-d f32 tile in the accumulator
layout, to the column vector (the dim-1 slice: every thread holds the values of its
columns, as a broadcast along rows reads them).

A column's values are spread over the thread's registers of that column, the eight lanes
of a warp that share `lane % 4` (the rows `lane / 4` and `lane / 4 + 8` of each 16-row
slice) and every warp of the partition. The lowering folds the thread's registers of each
column (a balanced tree), then the lanes (`shfl.sync.bfly` 4, 8, 16), then the warps
through shared scratch: lanes 0-3 of each warp write the warp's partial of their columns
to row `warp` of a (warps x N) f32 table between two `bar.sync`s of the consumer
partition, and every thread adds the table's rows of its columns in the same order, so
the result is the same in every thread that holds a column (a deterministic sum).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from tawac.backend_ptx.lowering.state import Frag, KernelLowering
from tawac.dialects import aref, ptx, tile
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER
from tawac.target.layouts import TID, AccLayout, Shr, Sub

_COMBINE = {"max": ptx.MaxOp, "min": ptx.MinOp, "sum": ptx.AddOp}

#: Lane masks of the butterfly shuffles over the lanes that hold the same columns.
_COLUMN_LANES = (4, 8, 16)


def _tree(values: list[SSAValue], combine: Callable[[SSAValue, SSAValue], SSAValue]):
    """A balanced tree of `combine` (log2(n) dependent steps instead of n - 1)."""
    while len(values) > 1:
        pairs = [combine(a, b) for a, b in zip(values[::2], values[1::2], strict=False)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]


def _consumer_partitions(k: KernelLowering) -> int:
    return sum(
        1
        for op in k.kernel.walk()
        if isinstance(op, aref.PartitionOp) and op.role.data == "consumer"
    )


def reduce_columns(k: KernelLowering, op: tile.ReduceOp, src: Frag) -> None:
    """The column vector of `src` (module docstring)."""
    part = k.part
    assert part is not None
    layout = src.layout
    if not isinstance(layout, AccLayout):
        raise CompileError("convert-to-ptx: tile.reduce along 0 needs a 2-d tile", op)
    if _consumer_partitions(k) != 1:
        raise CompileError(
            "convert-to-ptx: a reduction along dimension 0 in a kernel with several consumer "
            "partitions is not supported yet (they would share its shared scratch)",
            op,
        )
    cls = _COMBINE[op.kind.data]

    def combine(a: SSAValue, b: SSAValue) -> SSAValue:
        return k.r(cls("f32", a, b))

    offsets = layout.reg_offsets()
    cols = layout.col_offsets()
    partial = []
    for dc in cols:
        acc = _tree([src.regs[i] for i, (_, c) in enumerate(offsets) if c == dc], combine)
        for mask in _COLUMN_LANES:
            acc = combine(acc, k.r(ptx.ShflBflyOp(acc, mask)))
        partial.append(acc)
    warps = layout.warp_groups * HOPPER.warp_group_size // HOPPER.warp_size
    threads = layout.warp_groups * HOPPER.warp_group_size
    n = layout.n
    bar = k.barriers.get("consumer partition", preferred=HOPPER.named_barriers - 1)
    scratch = k.scratch(4 * warps * n)
    _, col0 = k.thread_coords(layout)
    base = k.r(ptx.FmaOp("s32", col0, k.imm(4), scratch))  # this thread's column 0
    warp = k.index(Shr(Sub(TID, HOPPER.warp_group_size * part.first_wg), 5))
    row = k.r(ptx.FmaOp("s32", warp, k.imm(4 * n), base))
    writer = k.r(ptx.SetpOp("lt", "u32", k.lane(), k.imm(4, "u32")))
    k.emit(ptx.BarSyncOp(bar, threads))  # the scratch's earlier readers are done

    def write() -> None:
        for dc, value in zip(cols, partial, strict=True):
            k.emit(ptx.StSharedOp("f32", k.add_imm(row, 4 * dc, "u32"), value))

    k.guarded(writer, write)
    k.emit(ptx.BarSyncOp(bar, threads))
    regs = []
    for dc in cols:
        parts = [
            k.r(ptx.LdSharedOp("f32", k.add_imm(base, 4 * (w * n + dc), "u32")))
            for w in range(warps)
        ]
        regs.append(_tree(parts, combine))
    k.vals[op.result] = Frag(layout, regs, "f32", 1)
