"""Which stores may leave through shared memory and TMA (`tma-store`'s staging) and where
they stand: the rule the planner decides their staging by and the pass applies."""

from __future__ import annotations

from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType

from tawac.dialects import aref, tile


def tma_storable(t: TensorType, warp_groups: int) -> bool:
    """A consumer's store of a tile of type `t` can go through shared memory and a TMA
    bulk store (`tma-store`): 16-bit elements, 2-d, whole 64-column chunks and m64 row
    blocks per warp group (the fragment layout's rows)."""
    if not isinstance(t.element_type, BFloat16Type | Float16Type):
        return False
    shape = t.get_shape()
    return len(shape) == 2 and shape[0] % (64 * warp_groups) == 0 and shape[1] % 64 == 0


def stageable(st: tile.StoreOp, warp_groups: int) -> bool:
    """A consumer's store that may leave through shared memory and a TMA bulk store: its
    tile is `tma_storable`, and it is neither bounded (a bounded store clips inside the
    tensor, TMA only at its end) nor transposed (swap-ab's C^T leaves from registers)."""
    vt = st.value.type
    if st.bounds or st.transposed is not None or not isinstance(vt, TensorType):
        return False
    return tma_storable(vt, warp_groups)


def store_after_loops(st: tile.StoreOp, part: aref.PartitionOp) -> bool:
    """The store is at the partition's top level, after every loop of the partition."""
    if st.parent_op() is not part:
        return False
    block = part.body.block
    idx = block.get_operation_index(st)
    return all(block.get_operation_index(o) < idx for o in block.ops if o.regions)


def staged_stores(kernel: tile.KernelOp, warp_groups: int) -> list[tile.StoreOp]:
    """The consumer stores that may be staged through shared memory for TMA, with
    `warp_groups` consumer warp groups (`stageable`), in walk order."""
    stores = []
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        stores += [
            o for o in part.walk() if isinstance(o, tile.StoreOp) and stageable(o, warp_groups)
        ]
    return stores
