"""`cooperative-consumers`: several consumer warp groups share each tile (Tawa section
4.5), applying the `roles` of `#tawac.schedule`.

Each partition gets the warp groups and the register budget its role has in the
schedule.  The consumer's tiles are split along their rows, warp group w owning rows
[w*M/W, (w+1)*M/W), so that a 128x256 fp32 accumulator takes 128 registers per thread
instead of 256; the split itself is a register layout decision
(`tawac.target.layouts`).  That the roles are realizable (every MMA tile splits
into m64 blocks per warp group, each MMA's accumulator fragment fits the consumer's
registers, the budgets fit the register file) is checked by `plan`
(`tawac.schedule.check.check_roles`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.dialects import aref, tile


@dataclass(frozen=True)
class CooperativeConsumersPass(ModulePass):
    name = "cooperative-consumers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            apply_kernel(kernel)


def apply_kernel(kernel: tile.KernelOp) -> None:
    plan = schedule.planned(kernel, "cooperative-consumers")
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    for part, role in zip(parts, plan.roles, strict=True):
        part.warp_groups = IntAttr(role.warp_groups)
        part.regs = IntAttr(role.regs)
