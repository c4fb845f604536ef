"""`plan{schedule=heuristic stages=0 mma-depth=0 ...}`: decide the kernel's schedule.

Runs right after `warp-specialize`. The planner named by `schedule`
(`tawac.schedule.planner`) reads the partitioned kernel and returns its `Schedule`; a
kernel that already carries a schedule with roles keeps it (a schedule written by hand,
or by an earlier `plan`: `planner = given` marks one written on the kernel). Then the
decisions that follow from it by one rule each are derived where it leaves them out
(`complete`: MMA waits, store staging), and the whole is checked against the kernel
(`tawac.schedule.check`: the one place a schedule is checked), before it is recorded as
`#tawac.schedule`; the passes after it apply it and decide nothing. It also records the
launch checks the kernel's stores imply (`tawac.analysis.grid.coverage_checks`: every
program's store lands; `split_sum_checks`: a split sum's count within its `max`), while
the stores still index by program id (`persistent` turns them into a loop's tiles). The
options are the pipeline knobs (`tawac.support.options.KNOBS`, one option each, with its
default; 0: choose), the planner's inputs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, make_dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.analysis.grid import coverage_checks, record_checks, split_sum_checks
from tawac.analysis.identity import name_unnamed
from tawac.dialects import tile
from tawac.schedule.check import check
from tawac.schedule.planner import complete, plan_reread, plan_resident, plan_spread
from tawac.schedule.registry import get_planner
from tawac.support.options import KNOBS, PipelineOptions, knob_fields


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
            name_unnamed(kernel)
            record_checks(kernel, coverage_checks(kernel) + split_sum_checks(kernel))
            given = schedule.of(kernel)
            s = (
                given
                if given.roles
                else plan_resident(
                    kernel, plan_spread(kernel, planner.plan(kernel, options), options), options
                )
            )
            s = complete(kernel, s, options)
            if not given.roles:
                s = plan_reread(kernel, s, options)
            check(kernel, s)
            if s.planner is None:
                s = dataclasses.replace(s, planner="given")
            schedule.record(kernel, s)


PlanPass = make_dataclass(
    "PlanPass",
    knob_fields(KNOBS, env=False),
    bases=(_Plan,),
    frozen=True,
    namespace={"__module__": __name__},
)
