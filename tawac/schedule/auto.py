"""The auto planner (`--schedule auto`): both planners propose, the cost model picks, and
where it cannot tell them apart, the target's measured preference decides.

`AutoPlanner.plan`:

1. Proposals: the heuristic's schedule (`HeuristicPlanner.plan`) and the solver's own
   (`SolverPlanner.propose`: before the solver planner's arbitration, which this
   replaces), each completed and checked as the `plan` pass does (`complete`, `check`).
   A planner that raises a `CompileError` (the solver without OR-Tools, or finding no
   schedule; a proposal the kernel cannot realize) proposes nothing, and the other's
   schedule is taken (rule `only`, with the error). The heuristic's planning error is
   the kernel's: the solver starts from the heuristic's decisions.
2. Prices (`cost`, `tawac.schedule.model.schedule_cost`): the sum over the consumer's
   main loops of the timeline model's steady-state interval.
3. The choice (`choose`): the cheaper proposal where its margin, (slow - fast) / slow in
   percent to one decimal, is at least the model's measured error for the kind of the
   kernel's consumer main loop (`Target.model_error_for`: the calibration's figure for
   comparing the two planners' schedules of such loops, `tawac.tools.calibrate.planner_errors`,
   else its median error; rule `model`);
   where the solver's schedule is not priced cheaper by at least `TIE_MARGIN` (a tie,
   or the heuristic's priced cheaper within the model's error), the heuristic's (rule
   `kept`), as the solver planner keeps it: the preferences are measured on the solver
   planner's builds, which differ from the heuristic's only where the model prices the
   solver's schedule cheaper by more than that, and say nothing of the others (a GEMM
   with two dots per step ran 1-5% slower under the solver's equally priced schedule:
   docs/perf.md, 2026-11-26, eighth part);
   otherwise (the solver's priced cheaper within the model's error, or nothing priced)
   the target's `preferred_planner` for the kind of the kernel's consumer main loop
   (`tawac.analysis.kinds.schedule_kind`, with the heuristic's consumer warp groups:
   attention on one is a kind of its own; rule `preferred`).
   `decide` is that rule on the figures alone (`tawac.tools.calibrate` replays it).

The schedule chosen is recorded with `planner = auto` and the decision as its `auto`
field (`tawac.dialects.schedule.AutoInfo`); a chosen solver schedule keeps its `solve`.
"""

from __future__ import annotations

import dataclasses
import math

from tawac.analysis.kinds import schedule_kind
from tawac.dialects import tile
from tawac.dialects.schedule import AutoInfo, Schedule
from tawac.schedule.check import check
from tawac.schedule.model import schedule_cost as cost
from tawac.schedule.planner import HeuristicPlanner, complete
from tawac.schedule.solver import MARGIN
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target import HOPPER, Target

#: A margin (percent) below which two proposals tie: the solver planner's own `MARGIN`,
#: under which it keeps the heuristic's schedule.
TIE_MARGIN = 100 * MARGIN


@dataclasses.dataclass(frozen=True)
class Proposal:
    """A planner's schedule for the kernel, completed and checked, with the model's
    price in cycles (`cost`; None: not priced)."""

    planner: str
    schedule: Schedule
    cost: float | None


def margin(fast: float | None, slow: float | None) -> float | None:
    """How much cheaper `fast` is than `slow`, in percent of `slow`, to one decimal; None
    where either is not priced."""
    if fast is None or slow is None or slow <= 0:
        return None
    return round(100 * (slow - fast) / slow, 1)


def decide(m: float | None, faster: str, error: float, preferred: str) -> tuple[str, str]:
    """(rule, planner) of `choose` (module docstring, 3.) for a margin `m` (percent, None:
    unpriced) by which planner `faster`'s proposal is priced cheaper, the model's `error`
    (percent) and the kind's `preferred` planner."""
    if m is not None and m > 0 and m >= error:
        return "model", faster
    if m is not None and (faster == "heuristic" or m < TIE_MARGIN):
        return "kept", "heuristic"
    return "preferred", preferred


def choose(
    proposals: list[Proposal],
    kind: str,
    target: Target = HOPPER,
    failed: tuple[str, CompileError] | None = None,
) -> tuple[Proposal, AutoInfo]:
    """Of two proposals, the one the kernel gets and why (the module docstring, 3.); of
    one, that one, the other planner having `failed` (its name and error)."""
    if len(proposals) == 1:
        name, err = failed if failed is not None else (None, None)
        why = " ".join(err.message.split()) if err is not None else None
        return proposals[0], AutoInfo(proposals[0].planner, "only", failed=name, why=why)
    fast, slow = sorted(proposals, key=lambda p: math.inf if p.cost is None else p.cost)
    m = margin(fast.cost, slow.cost)
    error = round(100 * target.model_error_for(kind), 1)
    preferred = target.preferred_planner(kind)
    rule, planner = decide(m, fast.planner, error, preferred)
    pick = next((p for p in proposals if p.planner == planner), None)
    if pick is None:
        raise CompileError(
            f"plan: the target prefers the planner '{preferred}' for {kind} loops, which "
            f"is not one of the proposals ({', '.join(p.planner for p in proposals)})"
        )
    if rule == "model":
        return pick, AutoInfo(pick.planner, "model", faster=pick.planner, margin=m, error=error)
    if rule == "kept":
        faster = fast.planner if m else None
        return pick, AutoInfo(pick.planner, "kept", faster=faster, margin=m, error=error)
    info = AutoInfo(
        pick.planner,
        "preferred",
        kind=kind,
        faster=fast.planner if m else None,
        margin=m,
        error=error if m is not None else None,
    )
    return pick, info


class AutoPlanner:
    """Both planners propose, the model picks (module docstring). `target`: the model's
    error and the preferences; `time_limit`: the solver's (its default if None)."""

    name = "auto"

    def __init__(self, target: Target = HOPPER, time_limit: float | None = None):
        self.target = target
        self.time_limit = time_limit

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule:
        base = HeuristicPlanner().plan(kernel, options)
        drafts = (
            ("heuristic", lambda: base),
            ("solver", lambda: self._solver().propose(kernel, options, base)),
        )
        proposals: list[Proposal] = []
        failures: list[tuple[str, CompileError]] = []
        for name, propose in drafts:
            try:
                s = complete(kernel, propose(), options)
                check(kernel, s)
            except CompileError as err:
                failures.append((name, err))
                continue
            proposals.append(Proposal(name, s, cost(kernel, s)))
        if not proposals:
            raise failures[0][1]
        failed = failures[0] if failures else None
        chosen, info = choose(proposals, schedule_kind(kernel, base), self.target, failed)
        return dataclasses.replace(chosen.schedule, planner=self.name, auto=info)

    def _solver(self):
        """The solver planner (imported on first use, as the registry does)."""
        from tawac.schedule.solver import TIME_LIMIT, SolverPlanner

        return SolverPlanner(self.time_limit if self.time_limit is not None else TIME_LIMIT)


__all__ = ["TIE_MARGIN", "AutoPlanner", "Proposal", "choose", "cost", "decide", "margin"]
