"""`plan{planner=heuristic stages=0 mma-depth=0 warp-groups=0 persistent=true group-m=8
tile-prefetch=true coarse-pipeline=true pingpong=false cluster=1x1}`: decide the kernel's
schedule.

Runs right after `warp-specialize`. The planner (`tawac.schedule.planner`) reads the
partitioned kernel and returns its `Schedule`; a kernel that already carries a schedule
with roles keeps it (a schedule written by hand, or by an earlier `plan`: `planner =
given` marks one written on the kernel). Then the decisions that follow from it by one
rule each are derived where it leaves them out (`complete`: MMA waits, store staging),
and the whole is checked against the kernel (`tawac.schedule.check`: the one place a
schedule is checked), before it is recorded as `#tawac.schedule`; the passes after it
apply it and decide nothing. The options are the planner's inputs (0: choose).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tawac import schedule
from tawac.analysis.identity import name_unnamed
from tawac.dialects import tile
from tawac.options import PipelineOptions
from tawac.schedule.check import check
from tawac.schedule.planner import complete, get_planner


@dataclass(frozen=True)
class PlanPass(ModulePass):
    name = "plan"

    planner: str = "heuristic"
    stages: int = 0
    mma_depth: int = 0
    warp_groups: int = 0
    persistent: bool = True
    group_m: int = 8
    tile_prefetch: bool = True
    coarse_pipeline: bool = True
    pingpong: bool = False
    cluster: str = "1x1"

    def options(self) -> PipelineOptions:
        return PipelineOptions(
            stages=self.stages,
            mma_depth=self.mma_depth,
            consumer_warp_groups=self.warp_groups,
            persistent=self.persistent,
            group_m=self.group_m,
            tile_prefetch=self.tile_prefetch,
            coarse_pipeline=self.coarse_pipeline,
            pingpong=self.pingpong,
            cluster=self.cluster,
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        planner = get_planner(self.planner)
        options = self.options()
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            name_unnamed(kernel)
            given = schedule.of(kernel)
            s = given if given.roles else planner.plan(kernel, options)
            s = complete(kernel, s, options)
            check(kernel, s)
            if s.planner is None:
                s = dataclasses.replace(s, planner="given")
            schedule.record(kernel, s)
