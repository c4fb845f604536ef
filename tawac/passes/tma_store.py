"""`tma-store`: epilogue stores through shared memory and TMA (run after `lower-aref`).

A consumer's `tile.store` of a 2-d tile of 16-bit elements becomes
    %t = hopper.smem_slot %staging[0]       (a 128B-swizzled tile, allocated at the top)
    hopper.store_fragment %value, %t        (registers -> shared memory, conflict-free)
    hopper.tma_store %t, %dest[%i, %j]      (per warp group: barrier, one bulk copy per
                                             64-column chunk, wait until read)
instead of one predicated 2-byte global store per element.  The bulk copy clips
out-of-bounds elements, so ragged M and N stay correct.

With the schedule's `staging = chunks N` (the planner's choice where a whole staging
tile does not fit beside the aref rings), the tile goes out in 64-column chunks through
a ring of N chunk buffers:
    hopper.store_fragment %value, %buf[j % N] columns 64j pending N-1
    hopper.tma_store %buf[j % N], %dest[%i, %j + 64j]

Stores whose tile does not
split into 64-column chunks and m64 row blocks per warp group, or whose staging tile
does not fit in the remaining shared memory, reuse the aref rings after a barrier over
all consumer warp groups (when the store follows the main loop), or else are left as
they are.
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
from tawac.analysis.stores import store_after_loops, tma_storable
from tawac.dialects import aref, hopper, tile
from tawac.schedule.smem import SmemPlan, chunk_ring_fits, staging_ring_type


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
        tma = hopper.TmaStoreOp(view, st.dest, [*lead, at])
        tma.location = st.location
        ops.append(tma)
    Rewriter.insert_op(ops, InsertPoint.before(st))
    Rewriter.erase_op(st)


def lower_kernel(kernel: tile.KernelOp) -> None:
    start = schedule.of(kernel).smem_bytes
    if start is None:
        return  # lower-aref has not run
    plan = SmemPlan(start=start)  # after lower-aref's rings and mbarriers
    chunks = schedule.of(kernel).staging
    body = kernel.body.block
    for part in [p for p in body.ops if isinstance(p, aref.PartitionOp)]:
        if part.role.data != "consumer":
            continue
        for st in [o for o in part.walk() if isinstance(o, tile.StoreOp)]:
            vt = st.value.type
            assert isinstance(vt, TensorType)
            if not tma_storable(vt, part.warp_groups.data):
                continue
            if chunks and chunk_ring_fits(vt, chunks):
                region = plan.try_tiles("staging", staging_ring_type(vt, chunks))
                if region is not None:
                    _stage_in_chunks(st, part, region.offset, chunks)
                    continue
            ring_t = hopper.smem_ring_type(vt, 1)
            region = plan.try_tiles("staging", ring_t)
            aliased = region is None
            if aliased:
                # Reuse the aref rings: once every consumer warp group has left its main
                # loop, all TMA copies into them have landed and all wgmmas reading them
                # have completed (the kernel is not persistent).
                if hopper.ring_bytes(ring_t) > plan.end or not store_after_loops(st, part):
                    continue
            alloc = hopper.SmemAllocOp(region.offset if region is not None else 0, ring_t)
            alloc.result.name_hint = "staging"
            Rewriter.insert_op(alloc, InsertPoint.before(part))
            zero = arith.ConstantOp.from_int_and_width(0, IndexType())
            view = hopper.SmemSlotOp(alloc.result, zero.result)
            frag = hopper.StoreFragmentOp(st.value, view.result)
            tma = hopper.TmaStoreOp(view.result, st.dest, list(st.indices))
            tma.location = st.location
            ops = [zero, view, frag, tma]
            if aliased:
                ops.insert(0, hopper.ConsumerSyncOp())
            Rewriter.insert_op(ops, InsertPoint.before(st))
            Rewriter.erase_op(st)
    schedule.update(kernel, smem_bytes=plan.end)


@dataclass(frozen=True)
class TmaStorePass(ModulePass):
    name = "tma-store"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            lower_kernel(k)
