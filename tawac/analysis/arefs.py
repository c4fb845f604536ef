"""What an aref's transfers look like: written in a loop (it needs a ring deeper than
one slot) or once per tile at the partition's top level (a per-tile operand such as
attention's Q), and whether consumer math reads its payload (into registers)."""

from __future__ import annotations

from tawac.analysis.loops import in_loop
from tawac.analysis.mma import is_mma_operand
from tawac.dialects import aref


def looped(create: aref.CreateOp) -> bool:
    """The aref is written in a loop (it needs a ring deeper than one slot)."""
    return any(
        isinstance(u.operation, aref.PutOp) and in_loop(u.operation) for u in create.result.uses
    )


def per_tile(create: aref.CreateOp) -> bool:
    """Written, read and released once per program, at the partition's top level."""
    slots = [
        u.operation
        for u in create.result.uses
        if isinstance(u.operation, aref.PutOp | aref.GetOp | aref.ConsumedOp)
    ]
    return all(isinstance(o.parent_op(), aref.PartitionOp) for o in slots)


def read_by_math(create: aref.CreateOp) -> bool:
    """Consumer math (not a dot's A or B operand) reads a payload of the aref: its slot is
    read into registers."""
    return any(
        isinstance(u.operation, aref.GetOp)
        and any(not is_mma_operand(x) for v in u.operation.values for x in v.uses)
        for u in create.result.uses
    )
