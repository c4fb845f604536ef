"""How each consumer store leaves the CTA: the planner's rule for the schedule's `stores`.

`tma-store` applies what this decides and decides nothing itself. The rule, per consumer
store in walk order, over the shared-memory plan `lower-aref` will lay out (the aref rings
at their planned depths, `tawac.schedule.smem`), each staging region placed after the ones
before it:

- `registers` when the kernel is compiled without TMA stores, or the tile cannot go
  through a swizzled staging tile (`tawac.analysis.stores.tma_storable`: 16-bit, 2-d,
  whole 64-column chunks and m64 row blocks per consumer warp group);
- `chunks N` when the kernel's staging tiles do not fit whole beside the rings but rings
  of N = 2 (else 1) 64-column chunk buffers do (`chunk_buffers`), and this store's fit;
- `whole`: one staging tile of the store's shape, where it fits;
- `rings`: the staging tile reuses the aref rings (from offset 0) once every consumer
  warp group has left its main loop, when the tile is no larger than what is laid out so
  far and the store is at the consumer's top level after its loops in a kernel that is
  not persistent (the rings are free for good only then);
- else `registers`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from tawac.analysis.stores import stageable, staged_stores, store_after_loops
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import StorePlan
from tawac.schedule.smem import SmemPlan, chunk_ring_fits, kernel_plan, staging_ring_type


def chunk_buffers(
    kernel: tile.KernelOp, depths: dict[aref.CreateOp, int], wgs: int, ctas: int = 1
) -> int:
    """0 where the staging tiles (`wgs` consumer warp groups) fit whole beside the rings
    at `depths`; else a ring of 2, or 1, column-chunk buffers per staged store where that
    fits (a deeper ring for the main loop, the epilogue in turns of 64 columns); else 0.
    `ctas`: CTAs a SM, whose share of shared memory the plan fits."""
    values = [st.value.type for st in staged_stores(kernel, wgs)]
    if not values or kernel_plan(kernel, depths, warp_groups=wgs, ctas=ctas).fits():
        return 0
    for n in (2, 1):
        fits = all(isinstance(v, TensorType) and chunk_ring_fits(v, n) for v in values)
        if fits and kernel_plan(kernel, depths, chunks=n, warp_groups=wgs, ctas=ctas).fits():
            return n
    return 0


def plan_stores(
    kernel: tile.KernelOp,
    warp_groups: int,
    depths: dict[aref.CreateOp, int],
    persistent: bool,
    tma_store: bool = True,
    ctas: int = 1,
) -> tuple[StorePlan, ...]:
    """The staging of every consumer store (the module docstring), with `warp_groups`
    consumer warp groups, the arefs at `depths`, in a `persistent` kernel or not, `ctas`
    CTAs a SM."""
    chunks = chunk_buffers(kernel, depths, warp_groups, ctas)
    layout = kernel_plan(kernel, depths, staging=False, ctas=ctas)
    out: list[StorePlan] = []
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        for st in [o for o in part.walk() if isinstance(o, tile.StoreOp)]:
            mode = _mode(st, part, warp_groups, chunks, layout, persistent) if tma_store else None
            name = st.ident or ""
            if mode is None:
                out.append(StorePlan(name, "registers"))
            elif mode == "chunks":
                out.append(StorePlan(name, mode, chunks))
            else:
                out.append(StorePlan(name, mode))
    return tuple(out)


def _mode(
    st: tile.StoreOp,
    part: aref.PartitionOp,
    warp_groups: int,
    chunks: int,
    layout: SmemPlan,
    persistent: bool,
) -> str | None:
    """The staging of one store, placing its region in `layout`; None: from registers."""
    vt = st.value.type
    assert isinstance(vt, TensorType)
    if not stageable(st, warp_groups):
        return None
    if chunks and chunk_ring_fits(vt, chunks):
        if layout.try_tiles("staging", staging_ring_type(vt, chunks)) is not None:
            return "chunks"
    ring_t = hopper.smem_ring_type(vt, 1)
    if layout.try_tiles("staging", ring_t) is not None:
        return "whole"
    if persistent or hopper.ring_bytes(ring_t) > layout.end or not store_after_loops(st, part):
        return None
    return "rings"


def staging_regions(
    layout: SmemPlan, stores: list[tuple[tile.StoreOp, StorePlan]]
) -> dict[tile.StoreOp, int]:
    """The offset of each staged store's buffers, placed after `layout` (the aref rings
    and mbarriers) in the order given, as `plan_stores` placed them (`rings`: 0)."""
    offsets: dict[tile.StoreOp, int] = {}
    placed: dict[str, int] = {}
    for st, p in stores:
        vt = st.value.type
        assert isinstance(vt, TensorType)
        if p.mode == "rings":
            offsets[st] = 0
        elif st.ident in placed:
            # copies of one store (`overlap-epilogue`) run one after the other, each
            # waiting until its bulk copy has read the buffers: they share them
            offsets[st] = placed[st.ident]
        elif p.staged:
            offsets[st] = layout.tiles("staging", staging_ring_type(vt, p.buffers)).offset
            placed[st.ident] = offsets[st]
    return offsets
