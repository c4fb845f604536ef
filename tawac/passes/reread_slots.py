"""`reread-slots`: a consumer computes row-long values again after a row reduction from
the ring slots it still holds, instead of holding them in registers across it, applying
the `reread` arefs of `#tawac.schedule`. Runs after `cooperative-consumers`, before
`lower-aref`.

Input: a partitioned kernel whose schedule marks arefs `reread` (`plan`:
`tawac.schedule.planner.plan_reread`, where the values held across a reduction would
not fit the consumer's registers). In every consumer block that gets and releases such
an aref once, the values computed from its slots by cheap elementwise ops and used after
a reduction (`tawac.analysis.remat`: x hat and w dy in a norm backward) are computed
again before their first use after it: a second `aref.get` of the same transfer, the
same ops; the slot's `aref.consumed` moves after the second read.

Output: the same kernel with, per such block and later segment, the cloned gets and ops,
and the releases moved. Where the schedule marks no aref, nothing changes. The slot's
payload cannot change while it is held, so the clones compute what the originals did;
what changes is how long the slot is held (to the second read) and that the registers
the values held across the reduction are free there.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.analysis import remat
from tawac.dialects import tile


def reread_kernel(kernel: tile.KernelOp) -> None:
    """Applies the schedule's `reread` arefs (`plan` checked that each has a block to
    read it again in)."""
    marked = schedule.reread_arefs(kernel, schedule.of(kernel))
    if not marked:
        return
    for r in remat.consumer_plans(kernel, lambda g: g.aref in marked):
        remat.apply(r)


@dataclass(frozen=True)
class RereadSlotsPass(ModulePass):
    """Applies the `reread` arefs of `#tawac.schedule` (nothing to do where none is)."""

    name = "reread-slots"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            reread_kernel(kernel)
