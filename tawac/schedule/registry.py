"""The planners by name (the `schedule` knob: `plan{schedule=...}`, `--schedule`): the
measured rules (`tawac.schedule.planner.HeuristicPlanner`), Twill's constraint solver
(`tawac.schedule.solver.SolverPlanner`, imported on first use: it needs OR-Tools only
when it solves) and the auto planner, which has both propose and the cost model pick
(`tawac.schedule.auto.AutoPlanner`)."""

from __future__ import annotations

from tawac.schedule.auto import AutoPlanner
from tawac.schedule.planner import HeuristicPlanner, Planner
from tawac.support.diagnostics import CompileError

PLANNERS: dict[str, Planner] = {"heuristic": HeuristicPlanner(), "auto": AutoPlanner()}

#: Every planner's name, those made on first use included (the `schedule` knob's choices).
NAMES = ("heuristic", "solver", "auto")


def get_planner(name: str) -> Planner:
    """The planner named `name`; an error naming the known ones otherwise."""
    if name == "solver" and name not in PLANNERS:
        from tawac.schedule.solver import SolverPlanner

        PLANNERS[name] = SolverPlanner()
    planner = PLANNERS.get(name)
    if planner is None:
        raise CompileError(f"unknown planner '{name}' (known: {', '.join(NAMES)})")
    return planner
