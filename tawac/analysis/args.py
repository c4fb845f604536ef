"""Which kernel arguments a kernel reads and writes (the sidecar's per-argument access,
the runtime's copies back of padded outputs)."""

from __future__ import annotations

from xdsl.ir import BlockArgument

from tawac.dialects import tile


def kernel_arg_uses(kernel: tile.KernelOp) -> tuple[set[int], set[int]]:
    """(indices of kernel arguments read by tile.load or tile.load_index, indices written
    by tile.store); a tile.atomic_add's destination is both (its values are added to), and
    so is the tensor of a tile.atomic_cas or tile.atomic_xchg (a lock)."""
    loads: set[int] = set()
    stores: set[int] = set()
    for op in kernel.walk():
        if isinstance(op, tile.LoadOp | tile.LoadIndexOp) and isinstance(op.source, BlockArgument):
            loads.add(op.source.index)
        if isinstance(op, tile.StoreOp) and isinstance(op.dest, BlockArgument):
            stores.add(op.dest.index)
        if isinstance(op, tile.AtomicAddOp) and isinstance(op.dest, BlockArgument):
            loads.add(op.dest.index)
            stores.add(op.dest.index)
        if isinstance(op, tile.SCALAR_ATOMICS) and isinstance(op.target, BlockArgument):
            loads.add(op.target.index)
            stores.add(op.target.index)
    return loads, stores
