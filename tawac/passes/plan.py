"""`plan{schedule=heuristic stages=0 mma-depth=0 ...}`: decide the kernel's schedule.

Runs right after `warp-specialize`. The planner named by `schedule`
(`tawac.schedule.planner`) reads the partitioned kernel and returns its whole `Schedule`,
recorded as `#tawac.schedule`; the passes after it apply it. The options are the pipeline
knobs (`tawac.options.KNOBS`, one option each, with its default; 0: choose), the
planner's inputs; a kernel that already carries a schedule with roles keeps it (a
schedule written by hand, or by an earlier `plan`).
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.dialects import tile
from tawac.options import KNOBS, PipelineOptions, knob_fields
from tawac.schedule.planner import get_planner


@dataclass(frozen=True)
class _Plan(ModulePass):
    """The `plan` pass without its options (`PlanPass` adds one field per knob)."""

    name = "plan"

    def options(self) -> PipelineOptions:
        return PipelineOptions(**{k.name: getattr(self, k.name) for k in KNOBS})

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = self.options()
        planner = get_planner(options.schedule)
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            if schedule.of(kernel).roles:
                continue
            schedule.record(kernel, planner.plan(kernel, options))


PlanPass = make_dataclass(
    "PlanPass",
    knob_fields(KNOBS, env=False),
    bases=(_Plan,),
    frozen=True,
    namespace={"__module__": __name__},
)
