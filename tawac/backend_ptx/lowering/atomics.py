"""Atomic adds of register tiles to global memory: `tile.atomic_add` as `red.global.add`
(PTX ISA 9.7.13.6: relaxed, GPU scope, no result), each element added once, by the
thread that holds it, under its bound (the tensor's size along each dimension).

- A 2-d f32 tile in the wgmma accumulator layout: each thread's two adjacent columns of
  an 8-column block as one `red.global.add.v2.f32` where the tile's column coordinate is
  even (the destination `aligned`: an 8-byte aligned address), under the pair's row and
  first column bound, else one `red.global.add.f32` per register.
- A 1-d tile in the slice layout of a 2-d one (a row's or a column's statistic): every
  thread of a row (column) holds the whole vector, so only the threads whose other
  coordinate is 0 add it, as `tile.store` writes it; a column vector's adjacent pairs
  as `.v2` where the coordinate is even.
- A standalone 1-d tile in a `BlockedLayout`: each run as vectors of 4 or 2 elements
  (`red.global.add.v4.f32` / `.v2.f32`, sm_90) where the run and the coordinate allow,
  else one element at a time, each vector under its first element's bound, as
  `tile.store`'s vectors are (`vectors.store_blocked`).

A vector predicated by its first element's bound adds its other elements past the
tensor's last-dimension size into the row's padding: the launcher gives an `aligned`
tensor rows of whole 16-byte pieces (a padded copy, copied in and back, otherwise), so
those adds stay in the allocation and touch no element of the tensor. Each element of a
vector is atomic on its own (what `tile.atomic_add` promises).

Scalar atomics, once per program (`tile.atomic_cas`, `tile.atomic_xchg`): the consumer
partition's threads meet at a barrier (`bar.sync`: what each did before is ordered
before what follows), its first thread does the one `atom{.sem}.gpu.global.cas.b32` /
`.exch.b32` (PTX ISA 9.7.13.5; `.sem` the op's memory order, skipped where the element
is outside the tensor: -1) and writes the old value to the shared scratch, and after a
second barrier every thread reads it there. A release is then cumulative over every
thread's earlier accesses and an acquire precedes every thread's later ones: the
barriers synchronize the partition's threads and causality order is transitive (PTX ISA
8, the memory consistency model), so the critical section's plain `ld.global`s and
`st.global`s need no fence of their own (the first barrier also keeps the scratch's
earlier readers ahead of the write, `KernelLowering.exchange`). `scf.while` without
loop-carried values (the spin of a lock) is a loop of labels and uniform branches: the
condition is a scalar, the same in every thread.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from tawac.analysis.scalars import multiple_of
from tawac.backend_ptx.lowering.state import (
    Frag,
    KernelLowering,
    handles,
    leading_base,
    wg_local,
)
from tawac.backend_ptx.lowering.tiles import column_pairs, tile_addresses
from tawac.backend_ptx.lowering.vectors import element_address, row_start, vector_piece
from tawac.dialects import aref, hopper, ptx, tile
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, layouts
from tawac.target.layouts import AccLayout, BlockedLayout


def _red(k: KernelLowering, addr: SSAValue, values: tuple[SSAValue, ...], ok: SSAValue) -> None:
    """One `red.global.add` of 1, 2 or 4 f32 values under `ok`; a vector form raises the
    module's PTX ISA version to the one it needs (the target's
    `vector_red_ptx_version`)."""
    if len(values) > 1:
        k.require_ptx(HOPPER.vector_red_ptx_version)
    k.emit(ptx.RedGlobalAddOp(addr, values, ok))


@handles(tile.AtomicAddOp)
def _atomic_add(k: KernelLowering, op: tile.AtomicAddOp) -> None:
    f = k.frag(op.value)
    if f.dtype != "f32":
        raise CompileError("convert-to-ptx: tile.atomic_add adds f32 tiles only", op)
    if isinstance(f.layout, BlockedLayout):
        _add_blocked(k, op, f, f.layout)
        return
    if f.dim is not None:
        _add_slice(k, op, f, f.layout, f.dim)
        return
    _add_tile(k, op, f, f.layout)


def _add_tile(k: KernelLowering, op: tile.AtomicAddOp, f: Frag, layout: AccLayout) -> None:
    """A 2-d tile in the accumulator layout: pairs of adjacent columns, else elements."""
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    if gt.rank < 2:
        raise CompileError("convert-to-ptx: a 2-d tile.atomic_add needs a tensor of rank 2", op)
    base = leading_base(k, op.dest, op.indices, gt.rank - 2, 4)
    pairs = column_pairs(layout) if multiple_of(op.indices[-1], 2) else None
    if pairs is not None:
        k.params.aligned(op.dest)
        places = tile_addresses(k, op.dest, op.indices, layout, base, 4, lazy=True, step=2)
        for i, (ok, addr) in zip(range(0, layout.num_regs, 2), places, strict=True):
            _red(k, addr, (f.regs[i], f.regs[i + 1]), ok)
        return
    places = tile_addresses(k, op.dest, op.indices, layout, base, 4, lazy=True)
    for reg, (ok, addr) in zip(f.regs, places, strict=True):
        _red(k, addr, (reg,), ok)


def _add_slice(
    k: KernelLowering, op: tile.AtomicAddOp, f: Frag, layout: AccLayout, dim: int
) -> None:
    """A row (dim 0) or column (dim 1) vector of a 2-d tile's layout along the tensor's
    last dimension, added by the threads whose other coordinate is 0."""
    gt = op.dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    last = gt.rank - 1
    base = leading_base(k, op.dest, op.indices, last, 4)
    size = k.r(ptx.LdParamOp("s32", k.params.dim(op.dest, last)))
    row0, col0 = k.thread_coords(layout)
    mine, other = (row0, col0) if dim == 0 else (col0, row0)
    first = k.r(ptx.SetpOp("eq", "s32", other, k.imm(0)))
    start = k.add(mine, k.scalar(op.indices[last]))
    offsets = layout.row_offsets() if dim == 0 else layout.col_offsets()
    paired = multiple_of(op.indices[last], 2) and _adjacent_pairs(offsets)
    if paired:
        k.params.aligned(op.dest)
    step = 2 if paired else 1
    for j in range(0, len(offsets), step):
        idx = k.add_imm(start, offsets[j])
        ok = k.r(ptx.AndOp("pred", first, k.r(ptx.SetpOp("lt", "s32", idx, size))))
        addr = element_address(k, base, idx, 4)
        _red(k, addr, tuple(f.regs[j : j + step]), ok)


def _adjacent_pairs(offsets: list[int]) -> bool:
    """Whether a thread's vector offsets come in pairs of an even offset and the next
    (the columns of the accumulator layout's column slice)."""
    if len(offsets) % 2:
        return False
    return all(a % 2 == 0 and b == a + 1 for a, b in zip(offsets[::2], offsets[1::2], strict=True))


def _add_blocked(k: KernelLowering, op: tile.AtomicAddOp, f: Frag, layout: BlockedLayout) -> None:
    """A standalone vector: each run in vectors of 4 or 2 elements where the run and the
    tile's coordinate allow, each under its first element's bound."""
    base, size, start = row_start(k, op.dest, op.indices, 4, layout)
    per = vector_piece(layout, op.indices[-1], (4, 2))
    for i in range(0, layout.num_regs, per):
        idx = k.add_imm(start, layout.reg_offset(i))
        ok = k.r(ptx.SetpOp("lt", "s32", idx, size))
        values: tuple[SSAValue, ...] = tuple(f.regs[i : i + per])
        _red(k, element_address(k, base, idx, 4), values, ok)


@handles(tile.AtomicCasOp, tile.AtomicXchgOp)
def _scalar_atomic(k: KernelLowering, op: tile.AtomicCasOp | tile.AtomicXchgOp) -> None:
    """One atomic of the partition's first thread between two barriers of the partition,
    its old value handed to every thread through the shared scratch (module docstring)."""
    part = k.part
    assert part is not None
    _check_partition(k, op)
    threads = HOPPER.warp_group_size * part.warp_groups
    scratch = k.scratch(4, op)
    if k.scratch_offset() + k.scratch_bytes > HOPPER.smem_per_block:
        raise CompileError(
            f"convert-to-ptx: {op.name}: no shared memory is left for the old value it hands "
            f"to the program's threads (the plan takes {k.scratch_offset()} bytes)",
            op,
        )
    inside, addr = _element(k, op.target, op.indices)
    first = k.r(ptx.SetpOp("eq", "u32", k.index(layouts.THREAD_IN_GROUP), k.imm(0, "u32")))
    first = k.r(ptx.AndOp("pred", first, k.r(ptx.SetpOp("eq", "s32", wg_local(k), k.imm(0)))))
    value = k.scalar(op.value)
    cmp = k.scalar(op.cmp) if isinstance(op, tile.AtomicCasOp) else None
    sem = op.order.data

    def atomic() -> None:
        old = k.r(ptx.DeclareRegOp("b32"))  # not `mov imm`: the atomic overwrites it
        k.emit(ptx.AssignImmOp("s32", old, -1))

        def swap() -> None:
            if cmp is not None:
                new = k.r(ptx.AtomCasOp(sem, addr, cmp, value))
            else:
                new = k.r(ptx.AtomExchOp(sem, addr, value))
            k.emit(ptx.AssignOp("b32", old, new))

        k.guarded(inside, swap)
        k.emit(ptx.StSharedOp("b32", scratch, old))

    k.exchange(threads, first, atomic)
    k.vals[op.result] = k.r(ptx.LdSharedOp("b32", scratch))


def _check_partition(k: KernelLowering, op: Operation) -> None:
    """A scalar atomic runs in the kernel's one consumer partition (its threads are the
    program's), without ping-pong turns (two consumers of one CTA, two programs)."""
    part = k.part
    assert part is not None
    consumers = [
        p for p in k.kernel.walk()
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    ]  # fmt: skip
    if part.role != "consumer":
        raise CompileError(f"convert-to-ptx: {op.name} in a {part.role} partition", op)
    if len(consumers) != 1:
        raise CompileError(
            f"convert-to-ptx: {op.name} runs once per program, in the kernel's one consumer "
            f"partition (this kernel has {len(consumers)})",
            op,
        )
    if any(isinstance(o, hopper.TurnOp) for o in k.kernel.walk()):
        raise CompileError(
            f"convert-to-ptx: {op.name} with ping-pong consumers is not supported yet; compile "
            "with --no-pingpong",
            op,
        )


def _element(
    k: KernelLowering, target: SSAValue, indices: tuple[SSAValue, ...] | list[SSAValue]
) -> tuple[SSAValue, SSAValue]:
    """(whether the coordinates are inside the tensor, the address of its i32 element)."""
    addr = k.r(ptx.LdParamOp("u64", k.params.pointer(target)))
    inside: SSAValue | None = None
    for d, index in enumerate(indices):
        i = k.scalar(index)
        size = k.r(ptx.LdParamOp("s32", k.params.dim(target, d)))
        ok = k.r(ptx.AndOp("pred", k.r(ptx.SetpOp("lt", "s32", i, size)),
                           k.r(ptx.SetpOp("ge", "s32", i, k.imm(0)))))  # fmt: skip
        inside = ok if inside is None else k.r(ptx.AndOp("pred", inside, ok))
        stride = k.r(ptx.LdParamOp("s64", k.params.stride(target, d)))
        off = k.r(ptx.MulOp("s64", k.r(ptx.CvtOp("s64", "s32", i)), stride, mode="lo"))
        addr = k.r(ptx.AddOp("s64", addr, k.r(ptx.MulOp("s64", off, k.imm(4, "s64"), mode="lo"))))
    assert inside is not None  # a tensor has rank 1 or more
    return inside, addr


@handles(scf.WhileOp)
def _while(k: KernelLowering, op: scf.WhileOp) -> None:
    """`scf.while` without loop-carried values (a spin): its condition's region, a
    uniform branch out where the condition is false, its body, a branch back."""
    if op.arguments or op.res:
        raise CompileError(
            "convert-to-ptx: scf.while with loop-carried values is not supported yet (a spin "
            "loop carries none)",
            op,
        )
    top, end = k.label("spin"), k.label("spin_end")
    k.emit(ptx.LabelOp(top))
    with k.scope():
        for inner in op.before_region.block.ops:
            if isinstance(inner, scf.ConditionOp):
                k.emit(ptx.BraOp(end, k.scalar(inner.condition), negate=True, uni=True))
                break
            k.lower_op(inner)
        for inner in op.after_region.block.ops:
            if not isinstance(inner, scf.YieldOp):
                k.lower_op(inner)
    k.emit(ptx.BraOp(top, uni=True))
    k.emit(ptx.LabelOp(end))
