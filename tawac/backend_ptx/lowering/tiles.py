"""Tile ops on register fragments in the consumer partitions.

`tile.splat`, `tile.iota`, `tile.cmpi`/`tile.select`, row reductions (`shfl.sync.bfly`
across the quad of lanes holding a row), broadcasts of row/column vectors, and 1-d vector
loads and 2-d stores between registers and global memory (predicated `ld`/`st.global`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import BlockArgument, SSAValue

from tawac.analysis.grid import workspace_of
from tawac.analysis.identity import argument_name
from tawac.analysis.scalars import constant_int, multiple_of
from tawac.backend_ptx.lowering.columns import reduce_columns
from tawac.backend_ptx.lowering.scalar import _LOG2E, select_frags
from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    combiner,
    elem_bytes,
    elem_ptx_type,
    handles,
    leading_base,
    map2,
    mov_type,
    tree,
    vector_splat,
    wg_local,
)
from tawac.backend_ptx.lowering.vectors import (
    iota_1d,
    load_blocked,
    reduce_to_scalar,
    store_blocked,
)
from tawac.dialects import hopper, ptx, tile
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, layouts
from tawac.target.blocked_tiles import BlockedTileLayout
from tawac.target.layouts import AccLayout, BlockedLayout


@handles(tile.SplatOp)
def _splat(k: KernelLowering, op: tile.SplatOp) -> None:
    t = op.result.type
    assert isinstance(t, TensorType)
    dtype = "f32" if isinstance(op.value.type, Float32Type) else "s32"
    if t.get_num_dims() == 1:
        k.vals[op.result] = vector_splat(k, op.result, op, k.scalar(op.value), dtype)
        return
    layout = k.layout_for(t, op)
    k.vals[op.result] = Frag(layout, [k.scalar(op.value)] * layout.num_regs, dtype)


@handles(tile.IotaOp)
def _iota(k: KernelLowering, op: tile.IotaOp) -> None:
    """offset + coordinate: the thread's coordinate (from the layout) plus each
    register's constant offset; registers with the same offset share one value.  A 1-d
    tile: `vectors.iota_1d`."""
    t = op.result.type
    assert isinstance(t, TensorType)
    if t.get_num_dims() == 1:
        iota_1d(k, op)
        return
    layout = k.layout_for(t, op)
    row0, col0 = k.thread_coords(layout)
    dim = op.dim.data
    base = k.add(k.scalar(op.offset), row0 if dim == 0 else col0)
    by_offset: dict[int, SSAValue] = {}
    regs = []
    for i in range(layout.num_regs):
        off = layout.reg_offset(i)[dim]
        if off not in by_offset:
            by_offset[off] = k.add_imm(base, off)
        regs.append(by_offset[off])
    k.vals[op.result] = Frag(layout, regs, "s32")


_TILE_CMPI = {"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge"}


@handles(tile.CmpiOp)
def _tile_cmpi(k: KernelLowering, op: tile.CmpiOp) -> None:
    a, b = k.frag(op.lhs), k.frag(op.rhs)
    if not a.same_layout(b):
        raise CompileError("convert-to-ptx: tile.cmpi operands differ in layout", op)
    cmp = _TILE_CMPI[op.predicate.data]
    k.vals[op.result] = a.like(map2(k, a, b, lambda x, y: ptx.SetpOp(cmp, "s32", x, y)), "pred")


@handles(tile.SelectOp)
def _tile_select(k: KernelLowering, op: tile.SelectOp) -> None:
    c, t, f = k.frag(op.cond), k.vals.get(op.true_value), k.vals.get(op.false_value)
    if not isinstance(t, Frag) or not isinstance(f, Frag):
        raise CompileError("convert-to-ptx: tile.select needs tiles", op)
    k.vals[op.result] = select_frags(k, op, c, t, f)


@handles(tile.ReduceOp)
def _reduce(k: KernelLowering, op: tile.ReduceOp) -> None:
    """Row reductions: combine a thread's registers of each row, then across the quad of
    lanes holding the row (`shfl.sync.bfly` 1, 2).  The result is the row vector in the
    slice layout (dim 0), replicated over the quad, so broadcasting it back is free.
    Column reductions: `columns.reduce_columns`; a 1-d tile reduced to a scalar:
    `vectors.reduce_to_scalar`."""
    if not isinstance(op.result.type, TensorType):
        reduce_to_scalar(k, op)
        return
    src = k.frag(op.source)
    if src.dim is not None or src.dtype != "f32":
        raise CompileError("convert-to-ptx: tile.reduce needs a 2-d f32 tile", op)
    if op.dim.data == 0:
        reduce_columns(k, op, src)
        return
    layout = src.layout
    combine = combiner(k, op.kind.data)
    regs = []
    offsets = layout.reg_offsets()
    for dr in layout.row_offsets():
        acc = tree([src.regs[i] for i, (r, _) in enumerate(offsets) if r == dr], combine)
        for mask in layout.row_reduction_lanes():
            acc = combine(acc, k.r(ptx.ShflBflyOp(acc, mask)))
        regs.append(acc)
    if isinstance(layout, BlockedTileLayout) and layout.col_warps > 1:
        regs = _combine_side_by_side(k, op, layout, regs, combine)
    k.vals[op.result] = Frag(layout, regs, "f32", 0)


def _combine_side_by_side(
    k: KernelLowering, op: tile.ReduceOp, layout: BlockedTileLayout, partial, combine
) -> list[SSAValue]:
    """The rows' values from the partials of the `col_warps` warps side by side along
    them: the first lane of each of a warp's rows writes the warp's partial of the row to
    entry (row, warp % col_warps) of a (rows x col_warps) f32 table in the shared scratch
    between two barriers of the consumer partition (`KernelLowering.exchange`); every
    thread then combines its rows' entries in the same order, so each row's value is the
    same in every thread that holds it."""
    cw = layout.col_warps
    scratch = k.scratch(layout.row_scratch_bytes, op)
    row0, _ = k.thread_coords(layout)
    base = k.r(ptx.FmaOp("s32", row0, k.imm(4 * cw), scratch))  # this thread's first row
    assert k.part is not None
    warp_col = k.index(layout.warp_col(k.part.first_wg))
    mine = k.r(ptx.FmaOp("s32", warp_col, k.imm(4), base))
    run = k.r(ptx.AndOp("b32", k.lane(), k.imm(layout.col_lanes - 1)))
    writer = k.r(ptx.SetpOp("eq", "u32", run, k.imm(0, "u32")))

    def write() -> None:
        for dr, value in zip(layout.row_offsets(), partial, strict=True):
            k.emit(ptx.StSharedOp("f32", k.add_imm(mine, 4 * cw * dr, "u32"), value))

    k.exchange(layout.threads, writer, write)
    regs = []
    for dr in layout.row_offsets():
        parts = [
            k.r(ptx.LdSharedOp("f32", k.add_imm(base, 4 * (cw * dr + w), "u32"))) for w in range(cw)
        ]
        regs.append(tree(parts, combine))
    return regs


@handles(tile.BroadcastOp)
def _broadcast(k: KernelLowering, op: tile.BroadcastOp) -> None:
    t = op.result.type
    assert isinstance(t, TensorType)
    layout = k.layout_for(t, op)
    src = k.vals.get(op.source)
    if not isinstance(src, Frag) or src.dim is None:
        raise CompileError(
            "convert-to-ptx: tile.broadcast needs a vector computed in this partition", op
        )
    if src.dim != op.dim.data or src.layout.slice_key(src.dim) != layout.slice_key(src.dim):
        raise CompileError("convert-to-ptx: tile.broadcast layout mismatch", op)
    regs = [src.regs[j] for j in layout.slice_indices(src.dim)]
    k.vals[op.result] = Frag(layout, regs, src.dtype)


@handles(tile.LoadOp)
def _load_vector(k: KernelLowering, op: tile.LoadOp) -> None:
    """A 1-d load in a consumer, loaded straight into the slice layout of its broadcast,
    or a standalone one's `BlockedLayout` (`vectors.load_blocked`).  (2-d loads come
    through arefs: warp-specialize gives them to the producer, TMA.)"""
    t = op.result.type
    assert isinstance(t, TensorType)
    if t.get_num_dims() != 1 and not op.result.uses:
        return  # read by nothing: no transfer at all
    if t.get_num_dims() != 1:
        raise CompileError(
            "convert-to-ptx: a 2-d tile.load in a consumer partition must come through an "
            "aref (warp-specialize gives it to the producer: TMA into shared memory)",
            op,
        )
    layout, dim = k.vector_layout(op.result, op)
    if dim is None:
        load_blocked(k, op, layout)
        return
    first, offsets = k.slice_coords(layout, dim)
    gt = op.source.type
    assert isinstance(gt, tile.GlobalTensorType)
    last = gt.rank - 1  # the tile runs along the last dimension, the others one element
    start = k.add(k.scalar(op.indices[last]), first)
    size = k.cached(
        ("param", k.params.dim(op.source, last)),
        lambda: k.r(ptx.LdParamOp("s32", k.params.dim(op.source, last))),
    )
    ety = elem_ptx_type(t.element_type)
    nbytes = elem_bytes(t.element_type)
    if last:  # the element at the other indices: lse[b, h, m0 ...] of a [B, H, S] tensor
        base = leading_base(k, op.source, op.indices, last, nbytes)
    else:
        base = k.cached(
            ("param", k.params.pointer(op.source)),
            lambda: k.r(ptx.LdParamOp("u64", k.params.pointer(op.source))),
        )
    regs = []
    for off in offsets:
        idx = k.add_imm(start, off)
        ok = k.r(ptx.SetpOp("lt", "s32", idx, size))
        addr = k.r(ptx.AddOp("s64", base, k.r(ptx.MulOp("s32", idx, k.imm(nbytes), mode="wide"))))
        val = k.r(ptx.MovImmOp("f32", 0.0)) if ety == "f32" else k.r(ptx.MovImmOp("b16", 0))
        k.guarded(
            ok,
            lambda a=addr, v=val: k.emit(
                ptx.AssignOp(mov_type(ety), v, k.r(ptx.LdGlobalOp(mov_type(ety), a)))
            ),
        )
        regs.append(val)
    k.vals[op.result] = Frag(layout, regs, ety, dim)


@handles(tile.StoreOp)
def _store(k: KernelLowering, op: tile.StoreOp) -> None:
    pol = k.store_hint(op)  # its `l2` priority's cache policy, for every store below
    f = k.frag(op.value)
    if isinstance(f.layout, BlockedLayout):
        store_blocked(k, op, f)
        return
    if f.dim is not None:
        if op.bounds:
            raise CompileError(
                "convert-to-ptx: a 1-d tile.store with bounds is not supported yet", op
            )
        _store_vector(k, op, f)
        return
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    if gt.rank < 2:
        raise CompileError("convert-to-ptx: a 2-d tile.store needs a tensor of rank 2 or more", op)
    nbytes = elem_bytes(gt.element_type)
    st_ty = mov_type(f.dtype)
    base = leading_base(k, op.dest, op.indices, gt.rank - 2, nbytes)
    if op.transposed is not None:
        _store_transposed(k, op, f, base, nbytes, st_ty)
        return
    if isinstance(f.layout, BlockedTileLayout):
        _store_runs(k, op, f, base, nbytes, st_ty)
        return
    whole = f.dtype == "f32" and not op.bounds
    pairs = whole_pairs(op.dest, op.indices, f.layout) if whole else None
    if pairs is not None:
        places = tile_addresses(k, op.dest, op.indices, f.layout, base, 4, lazy=True)
        for i, (_ok, addr) in enumerate(places):
            if i in pairs:
                k.emit(ptx.StGlobalV2Op(addr, f.regs[i], f.regs[i + 1], policy=pol))
        return
    if whole and _row_pairs(op.dest, op.indices, f.layout) is not None:
        # whole rows (the last dimension is the tile's columns): 8-byte pairs, each
        # under its row's bound (split-key attention's partials)
        places = tile_addresses(
            k, op.dest, op.indices, f.layout, base, 4, lazy=True, stack=tile.stack_of(op)
        )
        for i, (ok, addr) in enumerate(places):
            if i % 2 == 0:
                k.emit(ptx.StGlobalV2Op(addr, f.regs[i], f.regs[i + 1], ok, policy=pol))
        return
    if nbytes == 2 and f.layout.n % 8 == 0 and _vectors_fit(op, 8):
        _store_quads(k, op, f, base)
        return
    if f.dtype == "f32" and _vectors_fit(op, 2) and not _workspace(k, op.dest):
        _store_pairs(k, op, f, base)
        return
    places = tile_addresses(
        k,
        op.dest,
        op.indices,
        f.layout,
        base,
        nbytes,
        lazy=bool(op.bounds),
        bounds=op.bounds,
        stack=tile.stack_of(op),
    )
    for reg, (ok, addr) in zip(f.regs, places, strict=True):
        k.guarded(ok, lambda a=addr, v=reg: k.emit(ptx.StGlobalOp(st_ty, a, v, policy=pol)))


def _store_runs(
    k: KernelLowering, op: tile.StoreOp, f: Frag, base: SSAValue, nbytes: int, st_ty: str
) -> None:
    """A tile in a `BlockedTileLayout` stored from registers: each run in 16-byte vectors
    (`st.global.v4.b32`: four f32, or eight 16-bit elements packed), else 8 or 4 bytes,
    each under its first element's bounds, where the column coordinate and bound allow
    (`_vectors_fit`: the destination `aligned`, so a vector whose first element is inside
    a row lies in it); else one predicated store per element."""
    pol = k.store_hint(op)
    layout = f.layout
    assert isinstance(layout, BlockedTileLayout)
    fits = [p for p in ((4, 2) if nbytes == 4 else (8, 4, 2)) if layout.vec % p == 0]
    per = next((p for p in fits if _vectors_fit(op, p)), 1)
    if per == 1:
        stack = tile.stack_of(op)
        places = tile_addresses(
            k, op.dest, op.indices, layout, base, nbytes, lazy=True, bounds=op.bounds, stack=stack
        )
        for reg, (ok, addr) in zip(f.regs, places, strict=True):
            k.guarded(ok, lambda a=addr, v=reg: k.emit(ptx.StGlobalOp(st_ty, a, v, policy=pol)))
        return
    k.params.aligned(op.dest)
    row_addr, cols, col0 = tile_rows(k, op.dest, op.indices, layout, base, nbytes, op.bounds)
    for i in range(0, layout.num_regs, per):
        dr, dc = layout.reg_offset(i)
        rok, raddr = row_addr[dr]
        col = k.add_imm(col0, dc)
        ok = k.r(ptx.AndOp("pred", rok, k.r(ptx.SetpOp("lt", "s32", col, cols))))
        addr = k.r(ptx.AddOp("s64", raddr, k.r(ptx.MulOp("s32", col, k.imm(nbytes), mode="wide"))))
        values = f.regs[i : i + per]
        if nbytes == 2:
            pairs = zip(values[::2], values[1::2], strict=True)
            values = [k.r(ptx.PackB16Op(a, b)) for a, b in pairs]
        if len(values) == 4:
            k.emit(
                ptx.StGlobalV4B32Op(
                    addr, (values[0], values[1], values[2], values[3]), ok, policy=pol
                )
            )
        elif len(values) == 2:
            k.emit(ptx.StGlobalV2Op(addr, values[0], values[1], ok, policy=pol))
        else:
            k.emit(ptx.StGlobalOp("b32", addr, values[0], ok, policy=pol))


def _store_transposed(
    k: KernelLowering, op: tile.StoreOp, f: Frag, base: SSAValue, nbytes: int, st_ty: str
) -> None:
    """A tile stored transposed (`swap-ab`'s C^T): its element (i, j) to row j, column i
    of the block at the store's coordinates, one predicated store per register. A
    register's tile row is a destination column: the eight rows a warp's lanes hold at
    one register offset (lane / 4) are eight adjacent elements of a destination row."""
    pol = k.store_hint(op)
    layout = f.layout
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    r, c = gt.rank - 2, gt.rank - 1
    stride = k.r(ptx.LdParamOp("s64", k.params.stride(op.dest, r)))
    rows = k.r(ptx.LdParamOp("s32", k.params.dim(op.dest, r)))
    cols = k.r(ptx.LdParamOp("s32", k.params.dim(op.dest, c)))
    trow0, tcol0 = k.thread_coords(layout)
    col0 = k.add(trow0, k.scalar(op.indices[c]))  # the tile's rows run along c
    row0 = k.add(tcol0, k.scalar(op.indices[r]))  # its columns along r
    dest_cols: dict[int, tuple[SSAValue, SSAValue]] = {}
    for dr in layout.row_offsets():
        col = k.add_imm(col0, dr)
        ok = k.r(ptx.SetpOp("lt", "s32", col, cols))
        dest_cols[dr] = ok, k.r(ptx.MulOp("s32", col, k.imm(nbytes), mode="wide"))
    dest_rows: dict[int, tuple[SSAValue, SSAValue]] = {}
    for dc in layout.col_offsets():
        row = k.add_imm(row0, dc)
        ok = k.r(ptx.SetpOp("lt", "s32", row, rows))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", row)), stride, mode="lo"))
        off = k.r(ptx.MulOp("s64", off, k.imm(nbytes, "s64"), mode="lo"))
        dest_rows[dc] = ok, k.r(ptx.AddOp("s64", base, off))
    for i, reg in enumerate(f.regs):
        dr, dc = layout.reg_offset(i)
        cok, coff = dest_cols[dr]
        rok, raddr = dest_rows[dc]
        ok = k.r(ptx.AndOp("pred", rok, cok))
        k.emit(ptx.StGlobalOp(st_ty, k.r(ptx.AddOp("s64", raddr, coff)), reg, ok, policy=pol))


def _workspace(k: KernelLowering, dest: SSAValue) -> bool:
    """Whether `dest` is a buffer the launcher allocates (split-K's partial tiles): its
    f32 stores stay per element (as pairs they cost split-K by 8 a spill)."""
    names = workspace_of(k.kernel)
    return isinstance(dest, BlockArgument) and argument_name(dest, k.kernel) in names


def _vectors_fit(op: tile.StoreOp, columns: int) -> bool:
    """Whether a 2-d store from registers may write `columns` adjacent columns of a row
    per vector (eight 16-bit ones, two f32 ones): its column coordinate a multiple of
    `columns` and its column bound, if any, the tensor's own size. With rows of whole
    16-byte pieces (what `Params.aligned` asks of the launcher), a vector is then
    inside or outside as a whole. Not for a stacked store."""
    if tile.stack_of(op) > 1:
        return False
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    c = gt.rank - 1
    if not multiple_of(op.indices[c], columns):
        return False
    if not op.bounds:
        return True
    bound = op.bounds[c].owner
    return isinstance(bound, tile.DimOp) and bound.source is op.dest and bound.dim.data == c


def _store_pairs(k: KernelLowering, op: tile.StoreOp, f: Frag, base: SSAValue) -> None:
    """An f32 tile in the wgmma accumulator layout stored as 8-byte pairs: each thread's
    two adjacent columns of an 8-column block (PTX ISA 9.7.15.5.1, the D fragment) with
    one `st.global.v2.f32`, so a warp's store writes whole 32-byte sectors of eight rows
    (two 4-byte stores each wrote half of them: sub-sector writes, costly under a
    streaming load, docs/perf.md). The destination is `aligned` (8-byte pairs need an
    8-byte aligned address)."""
    pol = k.store_hint(op)
    k.params.aligned(op.dest)
    places = tile_addresses(
        k, op.dest, op.indices, f.layout, base, 4, lazy=True, bounds=op.bounds, step=2
    )
    for i, (ok, addr) in zip(range(0, f.layout.num_regs, 2), places, strict=True):
        k.emit(ptx.StGlobalV2Op(addr, f.regs[i], f.regs[i + 1], ok, policy=pol))


def _store_quads(k: KernelLowering, op: tile.StoreOp, f: Frag, base: SSAValue) -> None:
    """A 16-bit tile in the wgmma accumulator layout stored as 16-byte vectors. In each
    row a quad's four lanes hold columns 8b + 2q, 8b + 2q + 1 of every 8-column block b
    (PTX ISA 9.7.15.5.1, the D fragment). Per four blocks 4g .. 4g + 3 the lanes pack
    their pairs into 32-bit words and transpose them as a 4 x 4 matrix with two
    butterfly shuffles (lane masks 2, then 1: each lane swaps the two words whose index
    differs from its own in that bit), after which lane q holds the eight columns of
    block 4g + q in order: one `st.global.v4.b32` per lane, under its row's and block's
    bounds. A warp's store then covers whole 32-byte sectors of eight rows, where 16
    two-byte stores each wrote pieces of them (scattered sub-sector writes cost little
    on an idle memory system and much under a streaming load, docs/perf.md). Blocks
    past the last whole group of four (a tile of 152 columns has 19) go out as each
    lane's packed pair, one predicated `st.global.b32`: a row's block in one 16-byte
    piece. The destination is `aligned` (16-byte vectors need a 16-byte aligned
    address)."""
    pol = k.store_hint(op)
    k.params.aligned(op.dest)
    layout = f.layout
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    c = gt.rank - 1
    row_addr, cols, _ = tile_rows(k, op.dest, op.indices, layout, base, 2, op.bounds)
    quad = k.r(ptx.AndOp("b32", k.lane(), k.imm(3, "b32")))
    bit = {
        m: k.r(
            ptx.SetpOp("ne", "b32", k.r(ptx.AndOp("b32", quad, k.imm(m, "b32"))), k.imm(0, "b32"))
        )
        for m in (2, 1)
    }
    first = k.add(k.scalar(op.indices[c]), k.r(ptx.ShlOp("b32", quad, k.imm(3, "b32"))))
    pair = None  # the column of the lane's pair in block 0 (for the blocks past the groups)
    if layout.n % 32:
        pair = k.add(k.scalar(op.indices[c]), k.r(ptx.ShlOp("b32", quad, k.imm(1, "b32"))))

    def swap(x: list[SSAValue], mask: int, pairs: tuple[tuple[int, int], ...]) -> None:
        own = bit[mask]  # set: this lane keeps the words whose index has the bit set
        for lo, hi in pairs:
            send = k.r(ptx.SelpOp("b32", x[lo], x[hi], own))
            got = k.r(ptx.ShflBflyOp(send, mask))
            x[lo] = k.r(ptx.SelpOp("b32", got, x[lo], own))
            x[hi] = k.r(ptx.SelpOp("b32", x[hi], got, own))

    per = layout.regs_per_block
    for mi in range(layout.m_reps):
        for s in (0, 1):
            rok, raddr = row_addr[64 * mi + 8 * s]
            for g in range(layout.n // 32):
                x = []
                for b in range(4 * g, 4 * g + 4):
                    i = mi * per + 4 * b + 2 * s
                    x.append(k.r(ptx.PackB16Op(f.regs[i], f.regs[i + 1])))
                swap(x, 2, ((0, 2), (1, 3)))
                swap(x, 1, ((0, 1), (2, 3)))
                col = k.add_imm(first, 32 * g)
                ok = k.r(ptx.AndOp("pred", rok, k.r(ptx.SetpOp("lt", "s32", col, cols))))
                off = k.r(ptx.MulOp("s32", col, k.imm(2), mode="wide"))
                addr = k.r(ptx.AddOp("s64", raddr, off))
                k.emit(ptx.StGlobalV4B32Op(addr, (x[0], x[1], x[2], x[3]), ok, policy=pol))
            for b in range(4 * (layout.n // 32), layout.n // 8):
                i = mi * per + 4 * b + 2 * s
                word = k.r(ptx.PackB16Op(f.regs[i], f.regs[i + 1]))
                assert pair is not None
                col = k.add_imm(pair, 8 * b)
                ok = k.r(ptx.AndOp("pred", rok, k.r(ptx.SetpOp("lt", "s32", col, cols))))
                off = k.r(ptx.MulOp("s32", col, k.imm(2), mode="wide"))
                k.emit(
                    ptx.StGlobalOp("b32", k.r(ptx.AddOp("s64", raddr, off)), word, ok, policy=pol)
                )


def tile_addresses(
    k: KernelLowering,
    dest: SSAValue,
    indices: Sequence[SSAValue],
    layout: AccLayout,
    base: SSAValue,
    nbytes: int,
    lazy: bool = False,
    bounds: Sequence[SSAValue] = (),
    stack: int = 1,
    step: int = 1,
) -> Iterator[tuple[SSAValue, SSAValue]]:
    """Per register of a 2-d tile in `layout` at `indices` of `dest` (its last two
    dimensions, from `base`, the address of the leading indices' element): whether the
    element is inside the tensor, and its address; each pair emitted as it is taken.
    `lazy`: a column's bound and offset computed where its first register is taken, not
    all up front (the live registers of a sum over many slices). `bounds` (a bounded
    `tile.store`'s, one per dimension): an element at or past one is outside too.
    `stack` > 1 (a stacked store): row t of the tile is row t % per of index t / per of
    dimension rank-3 (per = rows / stack), also bounded by that dimension. `step` 2:
    only every other register (the first of each pair of adjacent columns)."""
    row_addr, cols, col0 = tile_rows(k, dest, indices, layout, base, nbytes, bounds, stack)
    col_off: dict[int, tuple[SSAValue, SSAValue]] = {}

    def column(dc: int) -> tuple[SSAValue, SSAValue]:
        col = k.add_imm(col0, dc)
        ok = k.r(ptx.SetpOp("lt", "s32", col, cols))
        return ok, k.r(ptx.MulOp("s32", col, k.imm(nbytes), mode="wide"))

    if not lazy:
        col_off = {dc: column(dc) for dc in layout.col_offsets()}
    for i in range(0, layout.num_regs, step):
        dr, dc = layout.reg_offset(i)
        rok, raddr = row_addr[dr]
        if dc not in col_off:
            col_off = {dc: column(dc)}  # lazy: one column's values live at a time
        cok, coff = col_off[dc]
        yield k.r(ptx.AndOp("pred", rok, cok)), k.r(ptx.AddOp("s64", raddr, coff))


def tile_rows(
    k: KernelLowering,
    dest: SSAValue,
    indices: Sequence[SSAValue],
    layout: AccLayout,
    base: SSAValue,
    nbytes: int,
    bounds: Sequence[SSAValue] = (),
    stack: int = 1,
) -> tuple[dict[int, tuple[SSAValue, SSAValue]], SSAValue, SSAValue]:
    """The row part of `tile_addresses`: per register row offset, whether the row is
    inside (and the leading coordinates under their bounds) and the row's address; the
    column bound; the thread's first column (coordinate included)."""
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    r, c = gt.rank - 2, gt.rank - 1
    stride = k.r(ptx.LdParamOp("s64", k.params.stride(dest, r)))
    rows = k.r(ptx.LdParamOp("s32", k.params.dim(dest, r)))
    cols = k.r(ptx.LdParamOp("s32", k.params.dim(dest, c)))
    lead: SSAValue | None = None
    if bounds:
        rows = k.r(ptx.MinOp("s32", rows, k.scalar(bounds[r])))
        cols = k.r(ptx.MinOp("s32", cols, k.scalar(bounds[c])))
        for d in range(r):  # the leading dimensions' one element each
            ok = k.r(ptx.SetpOp("lt", "s32", k.scalar(indices[d]), k.scalar(bounds[d])))
            lead = ok if lead is None else k.r(ptx.AndOp("pred", lead, ok))
    row0, col0 = k.thread_coords(layout)
    tile_row0 = row0
    row0 = k.add(row0, k.scalar(indices[r]))
    col0 = k.add(col0, k.scalar(indices[c]))
    row_addr: dict[int, tuple[SSAValue, SSAValue]] = {}
    for dr in layout.row_offsets():
        row = k.add_imm(row0, dr)
        heads = None
        if stack > 1:  # row t of the tile: row t % per of index t / per of dimension r - 1
            t = k.add_imm(tile_row0, dr)
            row, heads = _stack_split(k, t, layout.m // stack, k.scalar(indices[r]))
        ok = k.r(ptx.SetpOp("lt", "s32", row, rows))
        if lead is not None:
            ok = k.r(ptx.AndOp("pred", ok, lead))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", row)), stride, mode="lo"))
        if heads is not None:
            head = k.add(heads, k.scalar(indices[r - 1]))
            size = k.r(ptx.LdParamOp("s32", k.params.dim(dest, r - 1)))
            ok = k.r(ptx.AndOp("pred", ok, k.r(ptx.SetpOp("lt", "s32", head, size))))
            hstride = k.r(ptx.LdParamOp("s64", k.params.stride(dest, r - 1)))
            hoff = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", heads)), hstride, mode="lo"))
            off = k.r(ptx.AddOp("s64", off, hoff))
        off = k.r(ptx.MulOp("s64", off, k.imm(nbytes, "s64"), mode="lo"))
        row_addr[dr] = (ok, k.r(ptx.AddOp("s64", base, off)))
    return row_addr, cols, col0


def whole_pairs(dest: SSAValue, indices: Sequence[SSAValue], layout: AccLayout) -> set[int] | None:
    """Where a 2-d f32 tile at `indices` of `dest` is the whole of the tensor's last two
    dimensions (static sizes equal to the tile's, coordinates 0) and its registers come in
    pairs of adjacent columns: the first register of each pair (one 8-byte access each,
    no bounds to check). None otherwise. The workspace of stream-K is such a tensor."""
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    r, c = gt.rank - 2, gt.rank - 1
    dims = [d.data for d in gt.shape]
    if (dims[r], dims[c]) != (layout.m, layout.n):
        return None
    if constant_int(indices[r]) != 0 or constant_int(indices[c]) != 0:
        return None
    return column_pairs(layout)


def _row_pairs(dest: SSAValue, indices: Sequence[SSAValue], layout: AccLayout) -> set[int] | None:
    """`column_pairs` where a 2-d f32 tile at `indices` of `dest` spans whole rows of the
    tensor (its last dimension static, the tile's columns, coordinate 0): each pair
    inside wherever its row is. None otherwise."""
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    if gt.shape.data[-1].data != layout.n or constant_int(indices[-1]) != 0:
        return None
    return column_pairs(layout)


def column_pairs(layout: AccLayout) -> set[int] | None:
    """The first register of each pair of adjacent columns (an even one and the next),
    where the layout's registers all come in such pairs; None otherwise."""
    firsts = set(range(0, layout.num_regs, 2))
    for i in firsts:
        dr, dc = layout.reg_offset(i)
        if i + 1 >= layout.num_regs or layout.reg_offset(i + 1) != (dr, dc + 1) or dc % 2:
            return None
    return firsts


#: Slices whose loads `tile.split_softmax` issues together (one L2 round trip each):
#: for the maxima (a value per row), for the sums (a tile each).
MAX_UNROLL = 8
SPLIT_SOFTMAX_UNROLL = 2


@handles(tile.SplitSoftmaxOp)
def _split_softmax(k: KernelLowering, op: tile.SplitSoftmaxOp) -> None:
    """The combination of `count` partial softmaxes (the op's formula), per thread, as
    two loops over the slices in split order, several slices at a time (their loads
    issued together): the maxima M of its rows (`MAX_UNROLL` slices at a time); then
    (`SPLIT_SOFTMAX_UNROLL` at a time) each slice's weights w = 2^(m_s - M) (base e:
    times log2 e), L += w l_s and, over its register pairs, O += w O_s: one FMA per
    element and slice (`ld.global.cg.v2.f32` from the row's address: the partials are
    whole rows).  The exponent goes through max(x, -inf), which maps NaN (-inf - -inf:
    a row no slice has) to -inf: weight 0.  Loads are predicated on the row's bounds
    and the count: a row outside the tensors reads as empty (m = -inf, l = 0, O = 0)."""
    pt = op.partials.type
    t = op.out.type
    assert isinstance(pt, tile.GlobalTensorType) and isinstance(t, TensorType)
    layout = k.layout_for(t, op)
    pairs = _row_pairs(op.partials, op.indices, layout)
    if pairs is None:
        raise CompileError(
            "convert-to-ptx: tile.split_softmax needs partials of whole rows (the last "
            "dimension the tile's columns, coordinate 0)",
            op,
        )
    stack = tile.stack_of(op)
    idx = list(op.indices)
    fixed = constant_int(op.count)
    count = k.imm(min(fixed, op.max.data)) if fixed is not None else k.scalar(op.count)
    unroll = min(SPLIT_SOFTMAX_UNROLL, op.max.data)

    def step_of(v: SSAValue) -> SSAValue:
        st = k.r(ptx.LdParamOp("s64", k.params.stride(v, 0)))
        return k.r(ptx.MulOp("s64", st, k.imm(4, "s64"), mode="lo"))

    def at(addr: SSAValue, step: SSAValue, s: SSAValue) -> SSAValue:
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", s)), step, mode="lo"))
        return k.r(ptx.AddOp("s64", addr, off))

    def load(ok: SSAValue, addr: SSAValue, empty: float) -> SSAValue:
        v = k.r(ptx.MovImmOp("f32", empty))
        k.emit(ptx.LdGlobalIntoOp(addr, v, ok))
        return v

    def exp(x: SSAValue) -> SSAValue:
        x = k.r(ptx.MaxOp("f32", x, k.fimm(float("-inf"))))  # NaN -> -inf
        if op.base.data == "exp":
            x = k.r(ptx.MulOp("f32", x, k.fimm(_LOG2E), mode="rn"))
        return k.r(ptx.Ex2Op(x))

    (m_rows, m_step), (l_rows, l_step) = (
        (_row_places(k, v, idx[:-1], layout, stack), step_of(v))
        for v in (op.row_maxes, op.row_sums)
    )
    offsets = layout.row_offsets()
    base = leading_base(k, op.partials, idx, pt.rank - 2, 4)
    step = step_of(op.partials)
    first: dict[int, tuple[SSAValue, SSAValue, int]] = {}
    places = tile_addresses(k, op.partials, idx, layout, base, 4, lazy=True, stack=stack)
    for i, (ok, addr) in enumerate(places):
        dr, dc = layout.reg_offset(i)
        first.setdefault(dr, (ok, addr, dc))
    maxes = [k.r(ptx.MovImmOp("f32", float("-inf"))) for _ in offsets]
    sums = [k.r(ptx.MovImmOp("f32", 0.0)) for _ in offsets]
    out = [k.r(ptx.MovImmOp("f32", 0.0)) for _ in range(layout.num_regs)]

    def nth(s0: SSAValue, u: int) -> tuple[SSAValue, SSAValue | None]:
        """Slice s0 + u, and (u > 0) whether it is below the count."""
        if u == 0:
            return s0, None
        s = k.add_imm(s0, u)
        return s, k.r(ptx.SetpOp("lt", "s32", s, count))

    def both(ok: SSAValue, live: SSAValue | None) -> SSAValue:
        return ok if live is None else k.r(ptx.AndOp("pred", ok, live))

    def slice_loads(s: SSAValue, live: SSAValue | None):
        """Slice s's m and l per row and its pairs, where `live` (s < count) too."""
        rows = []
        for j in range(len(offsets)):
            ok = both(m_rows[j][0], live)
            rows.append(
                (
                    load(ok, at(m_rows[j][1], m_step, s), float("-inf")),
                    load(ok, at(l_rows[j][1], l_step, s), 0.0),
                )
            )
        tiles = {}
        for dr, (ok, addr, dc0) in first.items():
            row_ok = both(ok, live)
            row_at = at(addr, step, s)
            for i in sorted(pairs):
                if layout.reg_offset(i)[0] != dr:
                    continue
                a = k.add_imm(row_at, (layout.reg_offset(i)[1] - dc0) * 4, "s64")
                lo, hi = k.r(ptx.MovImmOp("f32", 0.0)), k.r(ptx.MovImmOp("f32", 0.0))
                k.emit(ptx.LdGlobalV2Op(a, lo, hi, row_ok))
                tiles[i] = (lo, hi)
        return rows, tiles

    def row_max(s0: SSAValue) -> None:
        for u in range(MAX_UNROLL):
            s, live = nth(s0, u)
            for j, (ok, addr) in enumerate(m_rows):
                m = load(both(ok, live), at(addr, m_step, s), float("-inf"))
                k.emit(ptx.AssignOp("f32", maxes[j], k.r(ptx.MaxOp("f32", maxes[j], m))))

    def combine(s0: SSAValue) -> None:
        loaded = []
        for u in range(unroll):
            loaded.append(slice_loads(*nth(s0, u)))
        for rows, tiles in loaded:
            ws: dict[int, SSAValue] = {}
            for j, dr in enumerate(offsets):
                m, part = rows[j]
                w = ws[dr] = exp(k.r(ptx.SubOp("f32", m, maxes[j])))
                k.emit(ptx.AssignOp("f32", sums[j], k.r(ptx.FmaOp("f32", w, part, sums[j]))))
            for i, (lo, hi) in tiles.items():
                w = ws[layout.reg_offset(i)[0]]
                for r, x in ((i, lo), (i + 1, hi)):
                    k.emit(ptx.AssignOp("f32", out[r], k.r(ptx.FmaOp("f32", w, x, out[r]))))

    slice_loop(k, count, row_max, MAX_UNROLL)
    slice_loop(k, count, combine, unroll)
    k.vals[op.out] = Frag(layout, out, "f32")
    k.vals[op.row_max] = Frag(layout, maxes, "f32", 0)
    k.vals[op.row_sum] = Frag(layout, sums, "f32", 0)


def slice_loop(
    k: KernelLowering, n: SSAValue, body, by: int = 1, may_be_empty: bool = False
) -> None:
    """`body(s)` for s = 0, by, 2 by, ... below n as a PTX loop (n >= 1, or with
    `may_be_empty` a branch past it where n <= 0); the registers it assigns carry from one
    iteration to the next."""
    iv = k.r(ptx.MovOp("b32", k.imm(0)))
    end = k.label("slices_end") if may_be_empty else None
    if end is not None:
        k.emit(ptx.BraOp(end, k.r(ptx.SetpOp("ge", "s32", iv, n)), uni=True))
    top = k.label("slices")
    k.emit(ptx.LabelOp(top))
    with k.scope():
        body(iv)
        k.emit(ptx.AssignOp("b32", iv, k.add_imm(iv, by)))
    k.emit(ptx.BraOp(top, k.r(ptx.SetpOp("lt", "s32", iv, n)), uni=True))
    if end is not None:
        k.emit(ptx.LabelOp(end))


def _stack_split(k: KernelLowering, t: SSAValue, per: int, start: SSAValue):
    """Row t of a stacked tile (`per` rows of each index of the dimension before the
    rows'): (its row, `start` + t % per; its index's offset there, t / per)."""
    row = k.add(k.r(ptx.RemOp("u32", t, k.imm(per))), start)
    return row, k.r(ptx.DivOp("u32", t, k.imm(per)))


def _row_places(
    k: KernelLowering,
    dest: SSAValue,
    indices: Sequence[SSAValue],
    layout: AccLayout,
    stack: int,
) -> list[tuple[SSAValue, SSAValue]]:
    """Per row of this thread (`layout.row_offsets()` order), whether a 1-d row vector's
    element at `indices` of `dest` (along its last dimension) is inside, and its address.
    `stack` > 1: row t is element t % per of index t / per of the dimension before the
    last (per = rows / stack), as a stacked tile's rows."""
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    last = gt.rank - 1
    base = leading_base(k, dest, indices, last, 4)
    size = k.r(ptx.LdParamOp("s32", k.params.dim(dest, last)))
    row0, _ = k.thread_coords(layout)
    start = k.scalar(indices[last])
    places = []
    for dr in layout.row_offsets():
        t = k.add_imm(row0, dr)
        if stack == 1:
            row = k.add(t, start)
            places.append(
                (
                    k.r(ptx.SetpOp("lt", "s32", row, size)),
                    k.r(ptx.AddOp("s64", base, k.r(ptx.MulOp("s32", row, k.imm(4), mode="wide")))),
                )
            )
            continue
        row, heads = _stack_split(k, t, layout.m // stack, start)
        hsize = k.r(ptx.LdParamOp("s32", k.params.dim(dest, last - 1)))
        head = k.add(heads, k.scalar(indices[last - 1]))
        ok = k.r(ptx.SetpOp("lt", "s32", row, size))
        ok = k.r(ptx.AndOp("pred", ok, k.r(ptx.SetpOp("lt", "s32", head, hsize))))
        hstride = k.r(ptx.LdParamOp("s64", k.params.stride(dest, last - 1)))
        hoff = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", heads)), hstride, mode="lo"))
        off = k.r(ptx.MulOp("s64", hoff, k.imm(4, "s64"), mode="lo"))
        addr = k.r(ptx.AddOp("s64", base, off))
        addr = k.r(ptx.AddOp("s64", addr, k.r(ptx.MulOp("s32", row, k.imm(4), mode="wide"))))
        places.append((ok, addr))
    return places


@handles(tile.ArriveOp)
def _arrive(k: KernelLowering, op: tile.ArriveOp) -> None:
    """The threads of the consumer partition meet (`bar.sync`: their stores ordered
    before what follows it); the partition's first thread releases them at GPU scope
    (`fence.acq_rel.gpu`, cumulative over what the barrier ordered) and adds 1 to the
    counter (`atom.acq_rel.gpu.add`, skipped where the coordinates are outside the
    tensor: a cluster's padding program), and, if it was the `count`-th, sets it back to
    0; a `bar.red.or` hands that answer to every thread, after the first thread's
    acquire (the atomic), so the last program's reads of the partials see every
    program's stores. One thread fences, not all: the pattern of a grid-wide barrier
    (PTX ISA 8.9, the memory consistency model's causality order)."""
    part = k.part
    assert part is not None
    if any(isinstance(o, hopper.TurnOp) for o in k.kernel.walk()):
        raise CompileError(
            "convert-to-ptx: tile.arrive (split-k) with ping-pong consumers is not supported "
            "yet; compile with --no-pingpong",
            op,
        )
    gt = op.counters.type
    assert isinstance(gt, tile.GlobalTensorType)
    threads = HOPPER.warp_group_size * part.warp_groups
    bar = k.barriers.get("consumer partition", preferred=HOPPER.named_barriers - 1)
    k.emit(ptx.BarSyncOp(bar, threads))
    addr = k.r(ptx.LdParamOp("u64", k.params.pointer(op.counters)))
    inside = k.r(ptx.SetpOp("eq", "u32", k.index(layouts.THREAD_IN_GROUP), k.imm(0, "u32")))
    inside = k.r(ptx.AndOp("pred", inside, k.r(ptx.SetpOp("eq", "s32", wg_local(k), k.imm(0)))))
    for d, index in enumerate(op.indices):
        i = k.scalar(index)
        size = k.r(ptx.LdParamOp("s32", k.params.dim(op.counters, d)))
        inside = k.r(ptx.AndOp("pred", inside, k.r(ptx.SetpOp("lt", "s32", i, size))))
        stride = k.r(ptx.LdParamOp("s64", k.params.stride(op.counters, d)))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", i)), stride, mode="lo"))
        addr = k.r(ptx.AddOp("s64", addr, k.r(ptx.MulOp("s64", off, k.imm(4, "s64"), mode="lo"))))
    old = k.r(ptx.DeclareRegOp("b32"))  # not `mov imm`: the load overwrites it
    k.emit(ptx.AssignImmOp("u32", old, 0))

    def take() -> None:
        k.emit(ptx.FenceGpuOp())
        k.emit(ptx.AssignOp("u32", old, k.r(ptx.AtomAddOp(addr, k.imm(1, "u32")))))

    k.guarded(inside, take)
    count = k.scalar(op.count)
    last = k.r(ptx.SetpOp("eq", "u32", k.r(ptx.AddOp("u32", old, k.imm(1, "u32"))), count))
    mine = k.r(ptx.AndOp("pred", inside, last))
    k.guarded(mine, lambda: k.emit(ptx.StGlobalOp("u32", addr, k.imm(0, "u32"))))
    k.vals[op.result] = k.r(ptx.BarRedOrOp(bar, threads, mine))


def _store_vector(k: KernelLowering, op: tile.StoreOp, f: Frag) -> None:
    """A 1-d tile (a row statistic: a vector in the slice layout of its 2-d tile) stored
    along the destination's last dimension, the other indices scalars; each element
    written once, by the threads whose other coordinate is 0 (`st.global`, PTX ISA
    9.7.9.10), the elements at or past the last dimension's size skipped."""
    pol = k.store_hint(op)
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    layout, dim = f.layout, f.dim
    assert dim is not None
    last = gt.rank - 1
    nbytes = elem_bytes(gt.element_type)
    if tile.stack_of(op) > 1:  # a stacked row statistic (split-key attention's partials)
        if dim != 0 or nbytes != 4:
            raise CompileError(
                "convert-to-ptx: a stacked 1-d tile.store stores an f32 row statistic", op
            )
        _, col0 = k.thread_coords(layout)
        first = k.r(ptx.SetpOp("eq", "s32", col0, k.imm(0)))
        places = _row_places(k, op.dest, op.indices, layout, tile.stack_of(op))
        for reg, (ok, addr) in zip(f.regs, places, strict=True):
            ok = k.r(ptx.AndOp("pred", first, ok))
            k.guarded(ok, lambda a=addr, v=reg: k.emit(ptx.StGlobalOp("f32", a, v, policy=pol)))
        return
    base = leading_base(k, op.dest, op.indices, last, nbytes)
    size = k.r(ptx.LdParamOp("s32", k.params.dim(op.dest, last)))
    row0, col0 = k.thread_coords(layout)
    mine, other = (row0, col0) if dim == 0 else (col0, row0)
    first = k.r(ptx.SetpOp("eq", "s32", other, k.imm(0)))
    start = k.add(mine, k.scalar(op.indices[last]))
    offsets = layout.row_offsets() if dim == 0 else layout.col_offsets()
    for reg, off in zip(f.regs, offsets, strict=True):
        idx = k.add_imm(start, off)
        ok = k.r(ptx.AndOp("pred", first, k.r(ptx.SetpOp("lt", "s32", idx, size))))
        addr = k.r(ptx.AddOp("s64", base, k.r(ptx.MulOp("s32", idx, k.imm(nbytes), mode="wide"))))
        k.guarded(
            ok,
            lambda a=addr, v=reg: k.emit(ptx.StGlobalOp(mov_type(f.dtype), a, v, policy=pol)),
        )
