"""Schedule decisions as data: the kernel's `#tawac.schedule` (`of`, `update`), the
planners that decide it (`planner`), the loop structure both read (`loops`), the
steady state of the main loops as timeline lanes (`model`), the simulator that runs them
on the cost model (`simulate`, on `cost`) and the shared-memory plan (`smem`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tawac.diagnostics import CompileError
from tawac.dialects import tile
from tawac.dialects.schedule import Schedule, ScheduleAttr

KEY = "tawac.schedule"


def of(kernel: tile.KernelOp) -> Schedule:
    """The kernel's schedule (an empty one when nothing was decided)."""
    attr = kernel.attributes.get(KEY)
    return attr.data if isinstance(attr, ScheduleAttr) else Schedule()


def planned(kernel: tile.KernelOp, pass_name: str) -> Schedule:
    """The kernel's schedule for a pass that applies it: an error if none was planned."""
    s = of(kernel)
    if not s.roles:
        raise CompileError(
            f"{pass_name}: the kernel has no #tawac.schedule; run the 'plan' pass first "
            "(or write the schedule on the kernel)",
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
