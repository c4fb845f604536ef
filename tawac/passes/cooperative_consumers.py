"""`cooperative-consumers`: several consumer warp groups share each tile (Tawa section
4.5), applying the `roles` of `#tawac.schedule`.

Each partition gets the warp groups and the register budget its role has in the
schedule.  The consumer's tiles are split along their rows, warp group w owning rows
[w*M/W, (w+1)*M/W), so that a 128x256 fp32 accumulator takes 128 registers per thread
instead of 256; the split itself is a register layout decision
(`tawac.target.layouts`).  This pass checks that the roles are realizable: every
MMA tile splits into m64 blocks per warp group, and each MMA's accumulator fragment
fits the consumer's registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.analysis.mma import dots_in, rows_problem
from tawac.diagnostics import CompileError
from tawac.dialects import aref, tile
from tawac.schedule.planner import register_problem


@dataclass(frozen=True)
class CooperativeConsumersPass(ModulePass):
    name = "cooperative-consumers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            apply_kernel(kernel)


def apply_kernel(kernel: tile.KernelOp) -> None:
    plan = schedule.planned(kernel, "cooperative-consumers")
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    if [p.role.data for p in parts] != [r.role for r in plan.roles]:
        raise CompileError(
            "cooperative-consumers: the schedule's roles "
            f"({', '.join(r.role for r in plan.roles)}) are not the kernel's partitions "
            f"({', '.join(p.role.data for p in parts)})",
            kernel,
        )
    for part, role in zip(parts, plan.roles, strict=True):
        if role.role == "consumer":
            _check_consumer(part, role.warp_groups)
        part.warp_groups = IntAttr(role.warp_groups)
        part.regs = IntAttr(role.regs)


def _check_consumer(part: aref.PartitionOp, w: int) -> None:
    dots = dots_in(part)
    rows = rows_problem(dots, w)
    if rows is not None:
        raise CompileError(f"cooperative-consumers: {rows[0]}", rows[1])
    problem = register_problem(dots, w)
    if problem is not None:
        raise CompileError(f"cooperative-consumers: {problem}; use fewer", part)
