"""`tile.split_sum`: the ordered sum of f32 partial tiles that other programs wrote
(split-K's and stream-K's workspace in the accumulator layout, a row kernel's own
partials in a blocked layout), read from L2 (`ld.global.cg`) after a `tile.arrive`."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tawac.analysis.scalars import constant_int, multiple_of
from tawac.backend_ptx.lowering.state import Frag, KernelLowering, handles, leading_base
from tawac.backend_ptx.lowering.tiles import slice_loop, tile_addresses, tile_rows, whole_pairs
from tawac.dialects import ptx, tile
from tawac.target.blocked_tiles import BlockedTileLayout
from tawac.target.layouts import AccLayout


@handles(tile.SplitSumOp)
def _split_sum(k: KernelLowering, op: tile.SplitSumOp) -> None:
    """The sum of `count` f32 tiles along the leading dimension, in order: each thread
    reads its registers' elements of slice s (`ld.global.cg`: written by other SMs, read
    from L2) and adds them to the sum of the slices before."""
    gt = op.source.type
    t = op.result.type
    assert isinstance(gt, tile.GlobalTensorType) and isinstance(t, TensorType)
    layout = k.layout_for(t, op)
    base = leading_base(k, op.source, op.indices, gt.rank - 2, 4)
    lead = k.r(ptx.LdParamOp("s64", k.params.stride(op.source, 0)))
    step = k.r(ptx.MulOp("s64", lead, k.imm(4, "s64"), mode="lo"))
    total: list[SSAValue] = []
    # Element by element (slice 0 + slice 1 + ...): one element's partials live at a time.
    # A count known only at run time reads slice s >= 1 under s < count.
    fixed = constant_int(op.count)
    most = op.max.data if fixed is None else min(fixed, op.max.data)
    count = k.scalar(op.count) if fixed is None else None
    if isinstance(layout, BlockedTileLayout):
        _split_sum_runs(k, op, layout, base, step, most, count)
        return
    pairs = whole_pairs(op.source, op.indices, layout)
    if pairs is not None:
        _split_sum_pairs(k, op, layout, base, step, most, count, pairs)
        return
    for ok, addr in tile_addresses(k, op.source, op.indices, layout, base, 4, lazy=True):
        acc: SSAValue | None = None
        for s in range(most):
            val = k.r(ptx.MovImmOp("f32", 0.0))
            guard = ok
            if count is not None and s > 0:  # compared where it is used: few live predicates
                guard = k.r(ptx.AndOp("pred", ok, k.r(ptx.SetpOp("lt", "s32", k.imm(s), count))))
            k.guarded(
                guard,
                lambda a=addr, v=val: k.emit(
                    ptx.AssignOp("f32", v, k.r(ptx.LdGlobalOp("f32", a, cache="cg")))
                ),
            )
            acc = val if acc is None else k.r(ptx.AddOp("f32", acc, val))
            if s + 1 < most:
                addr = k.r(ptx.AddOp("s64", addr, step))
        assert acc is not None
        total.append(acc)
    k.vals[op.result] = Frag(layout, total, "f32")


def _split_sum_runs(
    k: KernelLowering,
    op: tile.SplitSumOp,
    layout: BlockedTileLayout,
    base: SSAValue,
    step: SSAValue,
    most: int,
    count: SSAValue | None,
) -> None:
    """`_split_sum` of a tile in a `BlockedTileLayout` (a row kernel's sums): a loop over
    the slices (min(count, max) of them, in order), each reading every run of the
    thread's in 16-byte vectors of four f32 (`ld.global.cg.v4.f32`; 8 or 4 bytes where
    the runs or the column coordinate are shorter), predicated, not branched around, and
    adding them to running sums; each vector under its first element's bounds (the source
    `aligned`: a vector whose first element is inside a row lies in the row's 16-byte
    padding at worst). A loop, not one load per slice unrolled: a slice's loads are in
    flight together and the registers stay the sums and one slice's values (unrolled,
    ptxas hoisted every slice's loads and spilled). The elements past the row's end are
    set to zero after the loop (they read the padding)."""
    gt = op.source.type
    assert isinstance(gt, tile.GlobalTensorType)
    c = gt.rank - 1
    per = next((p for p in (4, 2) if layout.vec % p == 0 and multiple_of(op.indices[c], p)), 1)
    if per > 1:
        k.params.aligned(op.source)
    row_addr, cols, col0 = tile_rows(k, op.source, op.indices, layout, base, 4)
    runs: list[tuple[int, SSAValue, SSAValue, SSAValue]] = []  # (register, col, ok, address)
    for i in range(0, layout.num_regs, per):
        dr, dc = layout.reg_offset(i)
        rok, addr = row_addr[dr]
        col = k.add_imm(col0, dc)
        ok = k.r(ptx.AndOp("pred", rok, k.r(ptx.SetpOp("lt", "s32", col, cols))))
        addr = k.r(ptx.AddOp("s64", addr, k.r(ptx.MulOp("s32", col, k.imm(4), mode="wide"))))
        runs.append((i, col, ok, addr))
    sums = [k.r(ptx.MovImmOp("f32", 0.0)) for _ in range(layout.num_regs)]
    bound = k.imm(most) if count is None else k.r(ptx.MinOp("s32", count, k.imm(most)))
    off = k.r(ptx.MovImmOp("b64", 0))  # slice s's offset from slice 0, carried

    def add_slice(_s: SSAValue) -> None:
        for i, _col, ok, addr in runs:
            at = k.r(ptx.AddOp("s64", addr, off))
            regs = [k.r(ptx.MovImmOp("f32", 0.0)) for _ in range(per)]
            if per == 4:
                k.emit(ptx.LdGlobalV4Op(at, (regs[0], regs[1], regs[2], regs[3]), ok))
            elif per == 2:
                k.emit(ptx.LdGlobalV2Op(at, regs[0], regs[1], ok))
            else:
                k.emit(ptx.LdGlobalIntoOp(at, regs[0], ok))
            for j, v in enumerate(regs):
                k.emit(ptx.AssignOp("f32", sums[i + j], k.r(ptx.AddOp("f32", sums[i + j], v))))
        k.emit(ptx.AssignOp("b64", off, k.r(ptx.AddOp("s64", off, step))))

    slice_loop(k, bound, add_slice, may_be_empty=True)
    total = list(sums)
    for i, col, _ok, _addr in runs:  # past the row's end: the padding's values, not zeros
        for j in range(1, per):
            inside = k.r(ptx.SetpOp("lt", "s32", k.add_imm(col, j), cols))
            zero = k.r(ptx.MovImmOp("f32", 0.0))
            total[i + j] = k.r(ptx.SelpOp("f32", sums[i + j], zero, inside))
    k.vals[op.result] = Frag(layout, total, "f32")


def _split_sum_pairs(
    k: KernelLowering,
    op: tile.SplitSumOp,
    layout: AccLayout,
    base: SSAValue,
    step: SSAValue,
    most: int,
    count: SSAValue | None,
    pairs: set[int],
) -> None:
    """`_split_sum` of a whole tile (`whole_pairs`): one `ld.global.cg.v2.f32` per
    register pair and slice, no bounds; a count known only at run time predicates the
    slices after the first (`@p`, no branch)."""
    total: list[SSAValue] = []
    places = tile_addresses(k, op.source, op.indices, layout, base, 4, lazy=True)
    for i, (_ok, addr) in enumerate(places):
        if i not in pairs:
            continue
        sums: list[SSAValue] = []
        for s in range(most):
            guard = None
            if count is not None and s > 0:
                guard = k.r(ptx.SetpOp("lt", "s32", k.imm(s), count))
            if guard is None:  # written by the load itself
                lo, hi = k.r(ptx.DeclareRegOp("f32")), k.r(ptx.DeclareRegOp("f32"))
            else:  # zero where the slice is past the count
                lo, hi = k.r(ptx.MovImmOp("f32", 0.0)), k.r(ptx.MovImmOp("f32", 0.0))
            k.emit(ptx.LdGlobalV2Op(addr, lo, hi, guard))
            sums = (
                [lo, hi]
                if not sums
                else [k.r(ptx.AddOp("f32", sums[0], lo)), k.r(ptx.AddOp("f32", sums[1], hi))]
            )
            if s + 1 < most:
                addr = k.r(ptx.AddOp("s64", addr, step))
        total += sums
    k.vals[op.result] = Frag(layout, total, "f32")
