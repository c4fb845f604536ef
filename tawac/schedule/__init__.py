"""Schedule decisions as data: the kernel's `#tawac.schedule` (`of`, `update`,
`loop_plan`), the planners that decide it (`planner`, `solver`, and `auto`, which has
both propose and the cost model pick) and the rules and checks they share (`waits`,
`staging`, `check`), the steady state of the main loops as timeline lanes (`model`), the
simulator that runs them on the cost model (`simulate`, on `cost`) and the shared-memory
plan (`smem`). The IR facts they read are `tawac.analysis`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from tawac.analysis.grid import from_attr, infer_grid
from tawac.analysis.loops import scheduled_ops
from tawac.dialects import aref, tile
from tawac.dialects.schedule import ArefPlan, LoopPlan, OpPlan, Schedule, ScheduleAttr
from tawac.support.diagnostics import CompileError

KEY = "tawac.schedule"


def of(kernel: tile.KernelOp) -> Schedule:
    """The kernel's schedule (an empty one when nothing was decided)."""
    attr = kernel.attributes.get(KEY)
    return attr.data if isinstance(attr, ScheduleAttr) else Schedule()


def planned(kernel: tile.KernelOp, pass_name: str) -> Schedule:
    """The kernel's schedule for a pass that applies it: an error if `plan` has not
    decided (or checked and completed) it."""
    s = of(kernel)
    if not s.roles:
        raise CompileError(
            f"{pass_name}: the kernel has no #tawac.schedule; run the 'plan' pass first "
            "(or write the schedule on the kernel)",
            kernel,
        )
    if s.planner is None:
        raise CompileError(
            f"{pass_name}: the kernel's #tawac.schedule has not been through the 'plan' "
            "pass, which checks a schedule written on the kernel and completes it; run "
            "'plan' first",
            kernel,
        )
    return s


def record(kernel: tile.KernelOp, s: Schedule) -> Schedule:
    """Put `s` on the kernel as its `#tawac.schedule`."""
    kernel.attributes[KEY] = ScheduleAttr(s)
    return s


def update(kernel: tile.KernelOp, **changes: Any) -> Schedule:
    """Record decisions (fields of `Schedule`) on the kernel."""
    return record(kernel, dataclasses.replace(of(kernel), **changes))


def loop_plan(plan: Schedule, role: str, index: int, loop: scf.ForOp) -> LoopPlan:
    """The schedule of main loop `index` of `role`: the planned one, or every scheduled
    op at stage 0 in body order."""
    found = plan.loop(role, index)
    if found is not None:
        return found
    ops = scheduled_ops(loop.body.block)
    return LoopPlan(role, index, tuple(OpPlan(n, o.name) for n, o in enumerate(ops)))


def launch_grid(kernel: tile.KernelOp) -> list[dict[str, Any]]:
    """The kernel's grid of programs: a persistent kernel's planned `program_grid`, else
    the grid its stores imply."""
    recorded = of(kernel)
    if recorded.persistent:
        return from_attr(recorded.program_grid)
    return infer_grid(kernel)


def marked_arefs(
    kernel: tile.KernelOp, plan: Schedule, mark: Callable[[ArefPlan], Any]
) -> set[SSAValue]:
    """The arefs of `kernel` whose entry in `plan` has `mark` (`reread`, `hold`, ...)."""
    return {
        c.result
        for c in kernel.walk()
        if isinstance(c, aref.CreateOp) and (a := plan.aref(c.ident)) is not None and mark(a)
    }


def reread_arefs(kernel: tile.KernelOp, plan: Schedule) -> set[SSAValue]:
    """The arefs of `kernel` that `plan` marks `reread` (`reread-slots`)."""
    return marked_arefs(kernel, plan, lambda a: a.reread)
