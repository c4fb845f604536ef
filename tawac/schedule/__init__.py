"""Schedule decisions as data: the kernel's `#tawac.schedule` attribute (`of`, `update`)
and the shared-memory plan (`smem`)."""

from __future__ import annotations

from typing import Any

from tawac.dialects import tile
from tawac.dialects.schedule import ScheduleAttr

KEY = "tawac.schedule"


def of(kernel: tile.KernelOp) -> ScheduleAttr:
    """The kernel's schedule so far (an empty one before any pass decided anything)."""
    attr = kernel.attributes.get(KEY)
    return attr if isinstance(attr, ScheduleAttr) else ScheduleAttr.make()


def update(kernel: tile.KernelOp, **changes: Any) -> ScheduleAttr:
    """Record decisions (`ScheduleAttr.make`'s fields) on the kernel."""
    fields = {**of(kernel).fields(), **changes}
    kernel.attributes[KEY] = ScheduleAttr.make(**fields)
    return kernel.attributes[KEY]  # type: ignore[return-value]
