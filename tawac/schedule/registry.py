"""The planners by name (the `schedule` knob: `plan{schedule=...}`, `--schedule`): the
measured rules (`tawac.schedule.planner.HeuristicPlanner`) and Twill's constraint solver
(`tawac.schedule.solver.SolverPlanner`, imported on first use: it needs OR-Tools only
when it solves)."""

from __future__ import annotations

from tawac.diagnostics import CompileError
from tawac.schedule.planner import HeuristicPlanner, Planner

PLANNERS: dict[str, Planner] = {"heuristic": HeuristicPlanner()}

#: Every planner's name, those made on first use included.
NAMES = ("heuristic", "solver")


def get_planner(name: str) -> Planner:
    """The planner named `name`; an error naming the known ones otherwise."""
    if name == "solver" and name not in PLANNERS:
        from tawac.schedule.solver import SolverPlanner

        PLANNERS[name] = SolverPlanner()
    planner = PLANNERS.get(name)
    if planner is None:
        raise CompileError(f"unknown planner '{name}' (known: {', '.join(NAMES)})")
    return planner
