"""Standalone 1-d tiles in a consumer partition: vectors in a `BlockedLayout` (runs of
`vec` contiguous elements per thread), which no 2-d tile reduces into or broadcasts from.

- A load reads each run from global memory itself, 8 bytes at a time where the run and
  its coordinate allow (`ld.global.cg.v2.f32`: two f32, or four 16-bit elements as two
  packed words), each vector predicated by its first element's bound; the elements past
  the tensor's last-dimension size are selected to the load's padding.
- A store writes each run 16 bytes at a time where it can (`st.global.v4.b32`: four f32,
  or eight 16-bit elements packed), else 8 or 4 bytes, else one element, each vector
  predicated by its first element's bound.
  The launcher gives such a tensor a 16-byte aligned base and rows of whole 16-byte
  pieces (`Params.aligned`), so a vector whose first element is inside the row lies in
  the allocation.
- `tile.reduce` to a scalar folds the thread's registers (a balanced tree), then the
  warp's lanes (`shfl.sync.bfly` 16, 8, 4, 2, 1), then the partition's warps through
  shared memory (each warp's lane 0 writes its value between two `bar.sync`s of the
  consumer partition; every thread reads all of them in the same order), so every
  thread ends with the same scalar.

- A tile received through an aref (`load_slot_vector`: TMA copied it into shared memory
  in order, `LinearTile`) is read run by run with `ld.shared.v4` (16 bytes) where the run
  allows, or element by element into its slice of a 2-d tile's layout; the padding past
  the tensor was selected at the tile level (warp-specialize).

`iota_1d` lowers a 1-d `tile.iota` in either kind of vector layout: in a `BlockedLayout`
register i of a thread holds origin + thread_start + reg_offset(i); in the row (column)
slice of an accumulator layout, register j holds origin + the thread's row (column) +
the j-th distinct register row (column) offset, as a vector load there reads it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tawac.analysis.scalars import multiple_of
from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    SmemTile,
    combiner,
    elem_bytes,
    elem_ptx_type,
    leading_base,
    mov_type,
    tree,
)
from tawac.dialects import hopper, ptx, tile
from tawac.schedule.smem import reduce_scratch_bytes
from tawac.support.diagnostics import CompileError
from tawac.target.layouts import GRANULE_BYTES, BlockedLayout, warp_in_partition


def _b16_bits(value: float, dtype: str) -> int:
    """The bits of `value` as a bf16 or f16 (a load's padding in a 16-bit register)."""
    if dtype == "f16":
        return struct.unpack("<H", struct.pack("<e", value))[0]
    return struct.unpack("<I", struct.pack("<f", value))[0] >> 16  # exact for 0, +-inf


def row_start(k: KernelLowering, source: SSAValue, indices, nbytes: int, layout: BlockedLayout):
    """(the address of the row's element 0, the bound of its elements, this thread's first
    element) of a 1-d tile along the tensor's last dimension.  The bound is the row's size,
    or for a short layout the least of it and the tile's end: a thread owning no element
    reads and writes nothing."""
    part = k.part
    assert part is not None
    gt = source.type
    assert isinstance(gt, tile.GlobalTensorType)
    last = gt.rank - 1
    k.params.aligned(source)
    base = leading_base(k, source, indices, last, nbytes)
    size = k.cached(
        ("param", k.params.dim(source, last)),
        lambda: k.r(ptx.LdParamOp("s32", k.params.dim(source, last))),
    )
    first = k.cached(
        ("thread_start", layout.vec), lambda: k.index(layout.thread_start(part.first_wg))
    )
    origin = k.scalar(indices[last])
    start = k.add(origin, first)
    if layout.short:  # the threads past the vector's last element own nothing
        size = k.r(ptx.MinOp("s32", size, k.add_imm(origin, layout.n)))
    return base, size, start


def element_address(k: KernelLowering, base: SSAValue, idx: SSAValue, nbytes: int) -> SSAValue:
    return k.r(ptx.AddOp("s64", base, k.r(ptx.MulOp("s32", idx, k.imm(nbytes), mode="wide"))))


def vector_piece(layout: BlockedLayout, coord: SSAValue, elements: tuple[int, ...]) -> int:
    """The most elements of a run one vector access moves: the first of `elements` (in
    decreasing order) that divides the run and the tile's coordinate."""
    return next(
        (e for e in elements if e <= layout.vec and layout.vec % e == 0 and multiple_of(coord, e)),
        1,
    )


def load_blocked(k: KernelLowering, op: tile.LoadOp, layout: BlockedLayout) -> None:
    t = op.result.type
    assert isinstance(t, TensorType)
    ety = elem_ptx_type(t.element_type)
    nbytes = elem_bytes(t.element_type)
    base, size, start = row_start(k, op.source, op.indices, nbytes, layout)
    coord = op.indices[-1]
    per = vector_piece(layout, coord, (2,) if nbytes == 4 else (4,))
    pad = op.padding_value
    pad_reg = k.fimm(pad) if ety == "f32" else k.imm(_b16_bits(pad, ety), "b16")
    regs: list[SSAValue] = []
    for i in range(0, layout.num_regs, per):
        idx = k.add_imm(start, layout.reg_offset(i))
        ok = k.r(ptx.SetpOp("lt", "s32", idx, size))
        addr = element_address(k, base, idx, nbytes)
        if per == 1:
            regs.append(_load_one(k, ety, addr, ok, pad_reg))
            continue
        # two 32-bit words: two f32, or four 16-bit elements packed
        first = pad_reg if ety == "f32" else k.fimm(0.0)
        lo, hi = (k.r(ptx.MovOp("f32", first)) for _ in range(2))
        k.emit(ptx.LdGlobalV2Op(addr, lo, hi, ok))
        elements = [lo, hi]
        if ety != "f32":
            elements = [h for w in (lo, hi) for h in _unpack(k, w)]
        for j, x in enumerate(elements):
            if j == 0 and ety == "f32":
                regs.append(x)  # read where inside, else the padding it was set to
                continue
            inside = ok if j == 0 else k.r(ptx.SetpOp("lt", "s32", k.add_imm(idx, j), size))
            regs.append(k.r(ptx.SelpOp(mov_type(ety), x, pad_reg, inside)))
    k.vals[op.result] = Frag(layout, regs, ety)


def load_slot_vector(k: KernelLowering, op: hopper.LoadFragmentOp, slot: SmemTile) -> None:
    """A 1-d tile received through an aref (`LinearTile`: its elements in order) into its
    layout: a standalone vector's runs (`_load_slot_runs`) or a slice of a 2-d tile's
    (`_load_slot_slice`)."""
    layout, dim = k.vector_layout(op.result, op)
    if dim is not None:
        _load_slot_slice(k, op, slot, layout, dim)
        return
    assert isinstance(layout, BlockedLayout)
    _load_slot_runs(k, op, slot, layout)


def _load_slot_runs(
    k: KernelLowering, op: hopper.LoadFragmentOp, slot: SmemTile, layout: BlockedLayout
) -> None:
    """The thread's runs of a `BlockedLayout`: 16 bytes at a time where the run allows
    (`ld.shared.v4`: four f32, or eight 16-bit elements as packed words), else 8, 4 or 2.
    A thread of a short layout that owns nothing reads the last run (registers nothing
    uses), so no address leaves the tile. Then `slot_reads_done`: lane 0 of each warp
    releases the slot for the warp."""
    part = k.part
    assert part is not None
    ety = elem_ptx_type(slot.type.element_type)
    nbytes = elem_bytes(slot.type.element_type)
    first = k.cached(
        ("thread_start", layout.vec), lambda: k.index(layout.thread_start(part.first_wg))
    )
    if layout.short:
        first = k.r(ptx.MinOp("s32", first, k.imm(layout.n - layout.vec)))
    base = k.r(ptx.FmaOp("s32", first, k.imm(nbytes), slot.addr))
    per = min(layout.vec, GRANULE_BYTES // nbytes)  # elements of one access
    regs: list[SSAValue] = []
    for i in range(0, layout.num_regs, per):
        addr = k.add_imm(base, layout.reg_offset(i) * nbytes, "u32")
        regs += load_shared_run(k, addr, per * nbytes, ety)
    slot_reads_done(k)
    k.vals[op.result] = Frag(layout, regs, ety)


def _load_slot_slice(
    k: KernelLowering, op: hopper.LoadFragmentOp, slot: SmemTile, layout, dim: int
) -> None:
    """A 1-d tile received through an aref into the registers of its slice of a 2-d
    tile's layout (`dim` 1: the columns a thread holds, a norm's weight; 0: its rows):
    element (the thread's first row or column + the register's offset) of the slot, in
    `slice_runs`: one shared load of up to 16 bytes per run of consecutive offsets
    (`ld.shared.v4` for 8 bf16 columns of a blocked tile). Then `slot_reads_done`."""
    ety = elem_ptx_type(slot.type.element_type)
    nbytes = elem_bytes(slot.type.element_type)
    start, offsets = k.slice_coords(layout, dim)
    base = k.r(ptx.FmaOp("s32", start, k.imm(nbytes), slot.addr))
    regs: list[SSAValue] = []
    for off, count in slice_runs(offsets, k.slice_alignment(layout, dim), nbytes):
        regs += load_shared_run(k, k.add_imm(base, off * nbytes, "u32"), count * nbytes, ety)
    slot_reads_done(k)
    k.vals[op.result] = Frag(layout, regs, ety, dim)


def slice_runs(offsets: Sequence[int], align: int, nbytes: int) -> list[tuple[int, int]]:
    """(first offset, elements) of each shared load reading a slice's `offsets` (in
    order) from a linear slot whose base is 16-byte aligned: consecutive offsets as one
    access of 2, 4, 8 or 16 bytes where every thread's address is a multiple of its size.
    `align`: a power of two dividing every thread's first element index, so the element
    index start + off is a multiple of e where e divides both `align` and off. A run of
    16-bit elements reads whole 32-bit words (2 elements at least), else one element;
    elements of other sizes (8-bit) one at a time, as `load_shared_run` unpacks 16-bit
    halves only."""
    out: list[tuple[int, int]] = []
    widths = (16 // nbytes, 8 // nbytes, 4 // nbytes) if nbytes in (2, 4) else ()
    i = 0
    while i < len(offsets):
        off = offsets[i]
        count = 1
        for e in widths:
            if e < 2 or align % e or off % e:
                continue
            if tuple(offsets[i : i + e]) == tuple(range(off, off + e)):
                count = e
                break
        out.append((off, count))
        i += count
    return out


def slot_reads_done(k: KernelLowering) -> None:
    """After a warp's loads from a ring slot, before lane 0 releases the slot for the
    warp (`hopper.mbarrier_arrive`) and the producer's next TMA copy (the async proxy)
    overwrites it: `fence.proxy.async.shared::cta`, which orders the thread's generic-proxy
    reads before the async proxy's writes and waits for them to be performed (ptxas:
    `MEMBAR.ALL.CTA`), then `bar.warp.sync`, which orders every lane's reads before lane
    0's arrive. Without the fence a warp released slots it had not finished reading: the
    last of a consumer's warps to arrive (the one beside the producer warp on its SM
    sub-partition) read a few elements of the next copy (docs/design/backend.md)."""
    k.emit(ptx.FenceProxyAsyncOp())
    k.emit(ptx.BarWarpSyncOp())


def load_shared_run(k: KernelLowering, addr: SSAValue, nbytes: int, ety: str) -> list[SSAValue]:
    """The elements of type `ety` in the `nbytes` (2 to 16) at shared address `addr`, in
    one access: `ld.shared.v4` or `v2` of 32-bit words (f32, or 16-bit elements packed
    and split by `mov.b32`), one word, or one 16-bit element."""
    words = nbytes // 4  # 32-bit words of the access (0: one 16-bit element)
    if words == 0:
        return [k.r(ptx.LdSharedOp("b16", addr))]
    word_type = "f32" if ety == "f32" else "b32"
    if words == 4:
        got = list(k.emit(ptx.LdSharedV4Op(word_type, addr)).results)
    elif words == 2:
        got = list(k.emit(ptx.LdSharedV2Op(word_type, addr)).results)
    else:
        got = [k.r(ptx.LdSharedOp(word_type, addr))]
    return got if ety == "f32" else [h for w in got for h in _unpack(k, w)]


def _unpack(k: KernelLowering, word: SSAValue) -> tuple[SSAValue, SSAValue]:
    halves = k.emit(ptx.UnpackB16Op(word))
    return halves.results[0], halves.results[1]


def _load_one(
    k: KernelLowering, ety: str, addr: SSAValue, ok: SSAValue, pad_reg: SSAValue
) -> SSAValue:
    """One element, read where `ok`, else the padding."""
    ty = mov_type(ety)
    val = k.r(ptx.MovOp(ty, pad_reg))
    k.guarded(ok, lambda: k.emit(ptx.AssignOp(ty, val, k.r(ptx.LdGlobalOp(ty, addr)))))
    return val


def store_blocked(k: KernelLowering, op: tile.StoreOp, f: Frag) -> None:
    layout = f.layout
    assert isinstance(layout, BlockedLayout)
    if op.bounds:
        raise CompileError("convert-to-ptx: a 1-d tile.store with bounds is not supported yet", op)
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    nbytes = elem_bytes(gt.element_type)
    if nbytes != (4 if f.dtype == "f32" else 2):
        raise CompileError("convert-to-ptx: a 1-d tile.store converts no element type", op)
    regs = f.regs
    pol = k.store_hint(op)
    base, size, start = row_start(k, op.dest, op.indices, nbytes, layout)
    coord = op.indices[-1]
    per = vector_piece(layout, coord, (4, 2) if nbytes == 4 else (8, 2))
    for i in range(0, layout.num_regs, per):
        idx = k.add_imm(start, layout.reg_offset(i))
        ok = k.r(ptx.SetpOp("lt", "s32", idx, size))
        addr = element_address(k, base, idx, nbytes)
        values = regs[i : i + per]
        if nbytes == 2 and per > 1:
            pairs = zip(values[::2], values[1::2], strict=True)
            values = [k.r(ptx.PackB16Op(a, b)) for a, b in pairs]
        if len(values) == 4:
            k.emit(ptx.StGlobalV4B32Op(addr, tuple(values), ok, policy=pol))  # type: ignore[arg-type]
        elif len(values) == 2:
            k.emit(ptx.StGlobalV2Op(addr, values[0], values[1], ok, policy=pol))
        elif nbytes == 2 and per > 1:
            k.emit(ptx.StGlobalOp("b32", addr, values[0], ok, policy=pol))
        else:
            k.emit(ptx.StGlobalOp(mov_type(f.dtype), addr, values[0], ok, policy=pol))


def reduce_to_scalar(k: KernelLowering, op: tile.ReduceOp) -> None:
    """The thread's registers, the warp's lanes, then the partition's warps (module
    docstring); the scalar is the same register value in every thread."""
    src = k.frag(op.source)
    layout = src.layout
    part = k.part
    assert part is not None
    if not isinstance(layout, BlockedLayout) or src.dtype != "f32":
        raise CompileError(
            "convert-to-ptx: tile.reduce to a scalar needs an f32 1-d tile that no 2-d tile "
            "reduces into or broadcasts from",
            op,
        )
    combine = combiner(k, op.kind.data)
    regs = list(src.regs)
    if layout.short:  # the threads owning no element add the reduction's identity
        regs = _owned(k, layout, regs, op.kind.data)
    acc = tree(regs, combine)
    for mask in layout.reduction_lanes():
        acc = combine(acc, k.r(ptx.ShflBflyOp(acc, mask)))
    if layout.warps > 1:
        scratch = k.scratch(reduce_scratch_bytes(op, layout.warps), op)
        warp = k.index(warp_in_partition(part.first_wg))
        slot = k.r(ptx.FmaOp("s32", warp, k.imm(4), scratch))
        lane0 = k.r(ptx.SetpOp("eq", "u32", k.lane(), k.imm(0, "u32")))
        k.exchange(layout.threads, lane0, lambda: k.emit(ptx.StSharedOp("f32", slot, acc)))
        parts = [
            k.r(ptx.LdSharedOp("f32", k.add_imm(scratch, 4 * w, "u32")))
            for w in range(layout.warps)
        ]
        acc = tree(parts, combine)
    k.vals[op.result] = acc


_IDENTITY = {"max": float("-inf"), "min": float("inf"), "sum": 0.0}


def _owned(k: KernelLowering, layout: BlockedLayout, regs: list[SSAValue], kind: str):
    """The f32 registers of a short layout with the identity of reduction `kind` in the
    threads that own no element (their registers hold whatever was computed past the
    vector's end)."""
    part = k.part
    assert part is not None
    first = k.cached(
        ("thread_start", layout.vec), lambda: k.index(layout.thread_start(part.first_wg))
    )
    owns = k.r(ptx.SetpOp("lt", "s32", first, k.imm(layout.n)))
    identity = k.fimm(_IDENTITY[kind])
    return [k.r(ptx.SelpOp("f32", r, identity, owns)) for r in regs]


def iota_1d(k: KernelLowering, op: tile.IotaOp) -> None:
    """origin + coordinate of a 1-d tile, in its vector layout (module docstring);
    registers with the same offset share one value."""
    part = k.part
    assert part is not None
    layout, dim = k.vector_layout(op.result, op)
    origin = k.scalar(op.offset)
    if dim is None:
        first = k.cached(
            ("thread_start", layout.vec), lambda: k.index(layout.thread_start(part.first_wg))
        )
        offsets = list(layout.reg_offsets())
        base = k.add(origin, first)
    else:
        row0, col0 = k.thread_coords(layout)
        offsets = layout.row_offsets() if dim == 0 else layout.col_offsets()
        base = k.add(origin, row0 if dim == 0 else col0)
    by_offset: dict[int, SSAValue] = {}
    for off in offsets:
        if off not in by_offset:
            by_offset[off] = k.add_imm(base, off)
    k.vals[op.result] = Frag(layout, [by_offset[off] for off in offsets], "s32", dim)
