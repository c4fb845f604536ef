"""`tma-store`: epilogue stores through shared memory and TMA (run after `lower-aref`).

A consumer's `tile.store` of a 2-d tile of 16-bit elements that the schedule stages
`whole` (`stores = [c: whole]`) becomes
    %t = hopper.smem_slot %staging[0]       (a 128B-swizzled tile, allocated at the top)
    hopper.store_fragment %value, %t        (registers -> shared memory, conflict-free)
    hopper.tma_store %t, %dest[%i, %j]      (per warp group: barrier, one bulk copy per
                                             64-column chunk, wait until read)
instead of one predicated 2-byte global store per element.  The bulk copy clips
out-of-bounds elements, so ragged M and N stay correct.

With `chunks N` (the planner's choice where a whole staging tile does not fit beside the
aref rings), the tile goes out in 64-column chunks through
a ring of N chunk buffers:
    hopper.store_fragment %value, %buf[j % N] columns 64j pending N-1
    hopper.tma_store %buf[j % N], %dest[%i, %j + 64j]

With `rings`, the staging tile reuses the aref rings after a barrier over all consumer
warp groups (a store after the main loop of a kernel that is not persistent); with
`registers` (or no entry) the store is left as it is.  Which of these each store gets
is the schedule's `stores` (`tawac.schedule.staging` decides it); this pass lays the
staging buffers out after `lower-aref`'s rings, in the planner's order, and decides
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import StorePlan
from tawac.schedule.smem import SmemPlan, staging_ring_type
from tawac.schedule.staging import staging_regions


def _stage_in_chunks(st: tile.StoreOp, part: aref.PartitionOp, offset: int, chunks: int) -> None:
    """The store through a ring of `chunks` column-chunk buffers at `offset`: chunk j of
    the tile goes through buffer j % chunks, once the bulk store that read that buffer
    last is done (at most chunks - 1 newer ones pending)."""
    vt = st.value.type
    assert isinstance(vt, TensorType)
    ring_t = staging_ring_type(vt, chunks)
    alloc = hopper.SmemAllocOp(offset, ring_t)
    alloc.result.name_hint = "staging_chunks"
    Rewriter.insert_op(alloc, InsertPoint.before(part))
    width = ring_t.tile_type.cols
    ops: list[Operation] = []
    slots: list[SSAValue] = []
    for b in range(chunks):
        c = arith.ConstantOp.from_int_and_width(b, IndexType())
        view = hopper.SmemSlotOp(alloc.result, c.result)
        ops += [c, view]
        slots.append(view.result)
    *lead, col = st.indices
    for j in range(vt.get_shape()[1] // width):
        view = slots[j % chunks]
        frag = hopper.StoreFragmentOp(st.value, view, columns=j * width, pending=chunks - 1)
        ops.append(frag)
        at = col
        if j:
            off = arith.ConstantOp.from_int_and_width(j * width, IndexType())
            add = arith.AddiOp(col, off.result)
            ops += [off, add]
            at = add.result
        tma = hopper.TmaStoreOp(view, st.dest, [*lead, at], tile.stack_of(st))
        tma.location = st.location
        ops.append(tma)
    Rewriter.insert_op(ops, InsertPoint.before(st))
    Rewriter.erase_op(st)


def _stage_whole(st: tile.StoreOp, part: aref.PartitionOp, offset: int, aliased: bool) -> None:
    """The store through one staging tile of its shape at `offset` (after a barrier over
    the consumer warp groups when it reuses the aref rings)."""
    vt = st.value.type
    assert isinstance(vt, TensorType)
    alloc = hopper.SmemAllocOp(offset, hopper.smem_ring_type(vt, 1))
    alloc.result.name_hint = "staging"
    Rewriter.insert_op(alloc, InsertPoint.before(part))
    zero = arith.ConstantOp.from_int_and_width(0, IndexType())
    view = hopper.SmemSlotOp(alloc.result, zero.result)
    frag = hopper.StoreFragmentOp(st.value, view.result)
    tma = hopper.TmaStoreOp(view.result, st.dest, list(st.indices), tile.stack_of(st))
    tma.location = st.location
    ops: list[Operation] = [zero, view, frag, tma]
    if aliased:
        ops.insert(0, hopper.ConsumerSyncOp())
    Rewriter.insert_op(ops, InsertPoint.before(st))
    Rewriter.erase_op(st)


def lower_kernel(kernel: tile.KernelOp) -> None:
    start = schedule.of(kernel).smem_bytes
    if start is None:
        return  # lower-aref has not run
    plan = schedule.of(kernel)
    staged: list[tuple[tile.StoreOp, aref.PartitionOp, StorePlan]] = []
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        for st in [o for o in part.walk() if isinstance(o, tile.StoreOp)]:
            decided = plan.store(st.ident)
            if decided is not None and decided.staged:
                staged.append((st, part, decided))
    layout = SmemPlan(start=start, ctas=plan.ctas_per_sm)  # after lower-aref's rings and mbarriers
    offsets = staging_regions(layout, [(st, p) for st, _, p in staged])
    for st, part, decided in staged:
        if decided.mode == "chunks":
            _stage_in_chunks(st, part, offsets[st], decided.buffers)
        else:
            _stage_whole(st, part, offsets[st], aliased=decided.mode == "rings")
    schedule.update(kernel, smem_bytes=layout.end)


@dataclass(frozen=True)
class TmaStorePass(ModulePass):
    name = "tma-store"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            lower_kernel(k)
