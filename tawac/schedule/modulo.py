"""Modulo scheduling with warp-group assignment (Twill, arXiv 2512.18134) on OR-Tools
CP-SAT: the IR-free core of the solver planner (`tawac.schedule.solver` builds a
`Problem` from a kernel's main loops and turns a `Solution` into a `Schedule`).

The problem: one iteration of a software-pipelined loop as nodes (tile ops, or parts of
one) that warp groups issue and SM units execute, edges between them (latency, iteration
distance, or a ring's depth), register and shared-memory limits. A solution gives the
initiation interval II (cycles between iterations in the steady state), each node's start
time t (its stage `t // II` and its row `t % II` of the modulo reservation table), the
warp group issuing it, and the depth of each ring.

Model (all times in cycles in the `Problem`, rescaled to small integers by `scale`):

- `t[n] = II * stage[n] + row[n]`, `0 <= row[n] < II`, `0 <= stage[n] <= max_stage`.
- edges: `t[dst] + II * distance >= t[src] + latency` (for a ring edge, distance is
  `depth[ring] - ring.lag`, with `depth[ring]` a variable in `1..ring.max_depth`).
- shared units (every unit but "alu" and "sync"): per unit, the nodes' occupancy
  intervals `[row, row + occupancy)`, taken modulo II, do not overlap, counting every copy
  of a warp group (`Group.copies`: identical warp groups running the same schedule,
  copy c shifted by its own offset `phase[g][c]`, `phase[g][0] = 0`).
- issue: per warp group, the nodes it issues do not overlap in their issue intervals
  `[row, row + issue)` modulo II (one warp group issues one op at a time).
- assignment: node n is issued by one group of `n.groups` (a domain of one fixes it);
  an edge between nodes of different groups adds `Problem.handoff` cycles.
- nodes with the same `n.op` (the parts of one IR op) share their stage; the `frozen`
  nodes of a group (the first of their `groups`) share one stage and keep their listed
  order (a loop body that is not rewritten: it may still start stages after another
  group's).
- registers: per group, `reserved` plus, for each `Value` its producer issues,
  `regs * copies` where copies is the largest `stage[use] + distance - stage[producer]`
  over its uses (the iteration arguments the expanded loop carries it in) must stay
  within the group's `regs` budget.
- a node with `drain=True` (an MMA whose result a later stage reads: it is awaited at
  the end of its body) completes within its body: `row + latency <= II`.
- shared memory: `sum(depth[r] * r.slot_bytes) <= Problem.smem_bytes`.

Step 1 finds the smallest II at which the problem without registers, shared memory and
assignment choice is feasible (from the lower bound max(resource bound, recurrence
bound)); step 2 solves the whole problem at that II, then at II + 1, ... until feasible,
minimising the iteration's length (the last node's start), then the registers carried
across bodies (`Value.regs` times its copies), then the rows of the `early` nodes (the
MMAs first in the body), then the stages (the sum of
the ops' stages: of equally long schedules, the one that wraps least), then preferring the deepest
rings shared memory allows (the shallowest ring first): the interval needs only so many
slots, spare ones absorb latency the model does not see.
Deterministic: one worker, a fixed seed, a deterministic time limit.

Details of `solve`:

- scale: `scale = max(1, ceil(sum(occupancy + issue over nodes) / 256))` cycles per time
  unit; occupancies, issues and latencies (nodes, edges, `handoff`) are rounded *up* to
  units (anything > 0 is at least one unit), so a schedule in units is conservative in
  cycles. II is searched in units; `interval`, `start`, `phase` and `bound` are reported
  in cycles (units * scale).
- modulo non-overlap: a node's interval at row r (length <= II, else that II is
  infeasible) is placed at r and r + II in one NoOverlap over [0, 2 II): a circular
  non-overlap. Zero-length intervals are left out.
- copies: copy j of a group is copy 0 shifted by `phase[g][j]` in [0, II) (non-decreasing
  in j: the copies are interchangeable); on a shared unit its row is
  `(row + phase) mod II` (a wrap boolean), so every copy competes for the unit. The issue
  non-overlap of a group is over one copy (they are identical). An edge constrains copy 0
  of its endpoints, except a ring edge leaving a copied group for another group, which
  holds for every copy of its source (`t[src] + phase[g][j]`): each copy releases its own
  slot. An edge entering a copied group from another group holds for every copy of its
  destination; phases are non-negative delays, so copy 0's constraint implies the others
  and no constraint is added for them.
- assignment: booleans `x[n][g]` (exactly one per node); a node of one group has it fixed.
  Handoff: a boolean per edge whose endpoints may be in different groups, forced to 1 when
  they are (step 2 only).
- frozen order: for frozen nodes i before j in `Problem.nodes`, both issued by group g:
  `row[i] <= row[j]`.
- registers: `copies_v = max(0, max over uses (stage[use] + distance - stage[producer]))`;
  a producer with several possible groups gates its term with its assignment boolean.
- lower bound MII (units): the largest of each node's occupancy and issue, each drain
  node's latency, per shared unit the sum of occupancy * copies (the fewest copies in the
  node's domain), per group the issues of the nodes only it may issue, and the recurrence
  bound: the smallest II at which no dependence cycle has positive weight
  `latency - II * distance` (ring edges at their largest distance `max_depth - lag`;
  edges of negative distance left out) by binary search with Bellman-Ford; then raised
  to the window bound (`tawac.schedule.bounds.window_bound`): the smallest II at which
  the difference constraints every schedule meets hold (the edges, with the handoff
  where both ends are fixed to different groups; every start within
  `[0, (max_stage + 1) II - 1]`; the nodes of one stage, the parts of an op, a group's
  frozen nodes, the `same_stage` pairs, within II - 1 of each other; frozen nodes of
  one group in their order). On the test suite's 536 problems it removed 46% of the
  IIs the proof pass below would otherwise probe, none above an answer.
- search limit: II up to the sum of every node's occupancy * copies + issue + latency,
  every edge's latency and handoff (one stage fits everything at that II unless registers,
  shared memory, `max_stage` or zero-distance cycles forbid it); beyond it `Infeasible`.
- budget: every CP-SAT call runs with one worker, seed 0 and a deterministic time limit
  (`PROBE` work units for a feasibility probe, `FINAL` for the last optimisation), so a
  solve that ends within `time_limit` seconds of wall time is reproducible; the wall
  limit stops the search (and any call) when it runs out. The search over II: step 1
  probes MII, then gallops (MII + 1, 2, 4, ..., and the limit itself where the
  next step would pass it) to a feasible II and bisects down to the
  smallest feasible one it finds (near the bound feasibility is hard to decide: a short
  probe that ends undecided counts as not feasible); step 2 does the same from step 1's II
  with the full model, hinted with step 1's schedule at the same II (its first probe, the
  likeliest answer, gets the `FINAL` budget); every II below the
  answer not yet proven infeasible is then probed (a feasible one lowers the answer, an
  undecided one ends the proof); the answer's II gets the final optimisation. Out of
  time, the best schedule found so far is returned ("feasible"); with none, `Infeasible`
  (whose message says whether every II probed was proven infeasible or some probes
  ended undecided).
- status "optimal": every II below the answer was proven infeasible (or is below MII) and
  step 2's objective (length, then deeper rings) was proven optimal at it; `bound` is the
  smallest II not proven infeasible (scanning up from MII), in cycles.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace
from typing import Any

from tawac.schedule.bounds import lower_bound, search_limit
from tawac.schedule.problem import (
    PRIVATE_UNITS,
    SHARED_UNITS,
    UNITS_TARGET,
    Edge,
    Group,
    Infeasible,
    Node,
    Problem,
    Ring,
    Solution,
    Units,
    Value,
    check_problem,
    problem_scale,
    to_units,
)

__all__ = [
    "FINAL",
    "PROBE",
    "PRIVATE_UNITS",
    "SHARED_UNITS",
    "UNITS_TARGET",
    "Edge",
    "Group",
    "Infeasible",
    "Node",
    "Problem",
    "Ring",
    "Solution",
    "SolverUnavailable",
    "Units",
    "Value",
    "check_problem",
    "lower_bound",
    "problem_scale",
    "search_limit",
    "solve",
    "to_units",
]

_NEEDS_ORTOOLS = "the solver planner needs OR-Tools: pip install 'tawac[solver]'"


class SolverUnavailable(Exception):
    """OR-Tools (the `solver` extra) is not installed."""


def _cp_model() -> Any:
    """The CP-SAT module, imported on first use."""
    try:
        from ortools.sat.python import cp_model
    except ImportError:
        raise SolverUnavailable(_NEEDS_ORTOOLS) from None
    return cp_model


@dataclass
class _Model:
    """A CP-SAT model at one II and its variables."""

    model: Any
    t: list[Any]
    stage: list[Any]
    x: list[dict[str, Any]]
    phase: dict[str, list[Any]]
    depth: dict[str, Any]
    copies: list[Any]


def _circular(model: Any, start: Any, size: int, ii: int, present: Any, name: str) -> list:
    """An interval at `start` and its copy one II later: in a NoOverlap over [0, 2 II),
    a non-overlap modulo II."""
    if present is None:
        return [
            model.new_fixed_size_interval_var(start, size, name),
            model.new_fixed_size_interval_var(start + ii, size, name + "+"),
        ]
    return [
        model.new_optional_fixed_size_interval_var(start, size, present, name),
        model.new_optional_fixed_size_interval_var(start + ii, size, present, name + "+"),
    ]


def _different(model: Any, src: dict[str, Any], dst: dict[str, Any], name: str) -> Any:
    """1 when the two nodes are issued by different warp groups (a boolean forced to 1
    then, or a constant)."""
    if len(src) == 1 and len(dst) == 1:
        return int(set(src) != set(dst))
    diff = model.new_bool_var(name)
    for group, lit in src.items():
        if group in dst:
            model.add(diff >= lit - dst[group])
        else:
            model.add(diff >= lit)
    return diff


@dataclass(frozen=True)
class _Scope:
    """What each step of `_build` reads: the CP-SAT model being built, the problem, its
    costs in units and the II (units)."""

    model: Any
    problem: Problem
    units: Units
    ii: int

    @property
    def horizon(self) -> int:
        """The latest start (exclusive): the last stage's last row."""
        return self.ii * (self.problem.max_stage + 1)


def _stage_vars(s: _Scope) -> tuple[dict[int, Any], list[Any]]:
    """A stage per op (the nodes of one op share it; the frozen nodes of a group share
    one: their loop body is not rewritten), and the nodes' stages; `same_stage` ties."""
    model, problem = s.model, s.problem
    frozen_stage: dict[str, Any] = {}
    op_stage: dict[int, Any] = {}
    for node in problem.nodes:
        if node.op in op_stage:
            continue
        if node.frozen:
            key = node.groups[0]
            if key not in frozen_stage:
                frozen_stage[key] = model.new_int_var(0, problem.max_stage, f"stage_{key}")
            op_stage[node.op] = frozen_stage[key]
            continue
        op_stage[node.op] = model.new_int_var(0, problem.max_stage, f"stage_op{node.op}")
    stage = [op_stage[n.op] for n in problem.nodes]
    for a, b in problem.same_stage:
        model.add(stage[a] == stage[b])
    return op_stage, stage


def _node_vars(s: _Scope, stage: list[Any]) -> tuple[list[Any], list[Any], list[dict[str, Any]]]:
    """Per node its row, its start `t = II * stage + row` and its assignment booleans
    (exactly one group); a drain node completes within its body."""
    model, nodes, ii = s.model, s.problem.nodes, s.ii
    row = [model.new_int_var(0, ii - 1, f"row_{i}") for i in range(len(nodes))]
    t = [model.new_int_var(0, s.horizon - 1, f"t_{i}") for i in range(len(nodes))]
    x: list[dict[str, Any]] = []
    for i, node in enumerate(nodes):
        model.add(t[i] == ii * stage[i] + row[i])
        lits = {g: model.new_bool_var(f"x_{i}_{g}") for g in dict.fromkeys(node.groups)}
        model.add_exactly_one(lits.values())
        x.append(lits)
        if node.drain:
            model.add(row[i] + s.units.latency[i] <= ii)
    return row, t, x


def _not_ahead(s: _Scope, row: list[Any], stage: list[Any]) -> None:
    """`Problem.not_ahead`: row[a] >= row[b] where stage[a] > stage[b]."""
    for a, b in s.problem.not_ahead:
        later = s.model.new_bool_var(f"later_{a}_{b}")
        s.model.add(stage[a] > stage[b]).only_enforce_if(later)
        s.model.add(stage[a] <= stage[b]).only_enforce_if(later.negated())
        s.model.add(row[a] >= row[b]).only_enforce_if(later)


def _phase_vars(s: _Scope) -> dict[str, list[Any]]:
    """Per group the offsets of its copies (copy 0 at 0, the others non-decreasing)."""
    phase: dict[str, list[Any]] = {}
    for group in s.problem.groups:
        offsets: list[Any] = [0]
        for j in range(1, group.copies):
            offset = s.model.new_int_var(0, s.ii - 1, f"phase_{group.name}_{j}")
            if j > 1:
                s.model.add(offset >= offsets[-1])
            offsets.append(offset)
        phase[group.name] = offsets
    return phase


def _shared_units(
    s: _Scope, row: list[Any], x: list[dict[str, Any]], phase: dict[str, list[Any]]
) -> None:
    """Shared units: every node's occupancy, for every copy of the group issuing it, in
    one circular non-overlap per unit."""
    model, ii = s.model, s.ii
    groups = {g.name: g for g in s.problem.groups}
    on_unit: dict[str, list[Any]] = {}
    for i, node in enumerate(s.problem.nodes):
        size = s.units.occupancy[i]
        if size == 0 or node.unit in PRIVATE_UNITS:
            continue
        intervals = on_unit.setdefault(node.unit, [])
        intervals += _circular(model, row[i], size, ii, None, f"occ_{i}")
        for group, lit in x[i].items():
            for j in range(1, groups[group].copies):
                start = model.new_int_var(0, ii - 1, f"row_{i}_{group}_{j}")
                wrap = model.new_bool_var(f"wrap_{i}_{group}_{j}")
                model.add(start == row[i] + phase[group][j] - ii * wrap)
                intervals += _circular(model, start, size, ii, lit, f"occ_{i}_{group}_{j}")
    for intervals in on_unit.values():
        model.add_no_overlap(intervals)


def _issue_slots(s: _Scope, row: list[Any], x: list[dict[str, Any]]) -> None:
    """Issue: one warp group issues one node at a time (its copies alike)."""
    issue = s.units.issue
    for group in s.problem.groups:
        intervals = []
        for i in range(len(s.problem.nodes)):
            if group.name not in x[i] or issue[i] == 0:
                continue
            present = None if len(x[i]) == 1 else x[i][group.name]
            intervals += _circular(
                s.model, row[i], issue[i], s.ii, present, f"issue_{i}_{group.name}"
            )
        if intervals:
            s.model.add_no_overlap(intervals)


def _depth_vars(s: _Scope) -> dict[str, Any]:
    """Per ring its depth: 1 to its deepest (fixed at the deepest when `fixed`)."""
    return {
        r.name: s.model.new_int_var(r.max_depth if r.fixed else 1, r.max_depth, f"depth_{r.name}")
        for r in s.problem.rings
    }


def _edges(
    s: _Scope,
    t: list[Any],
    x: list[dict[str, Any]],
    phase: dict[str, list[Any]],
    depth: dict[str, Any],
    handoff: bool,
) -> None:
    """Every edge's latency (plus the handoff between groups, with `handoff`) over its
    distance, a ring edge's from its ring's depth; a ring edge leaving a copied group
    holds for every copy of its source (each releases its own slot)."""
    model, ii, units = s.model, s.ii, s.units
    groups = {g.name: g for g in s.problem.groups}
    rings = {r.name: r for r in s.problem.rings}
    for k, edge in enumerate(s.problem.edges):
        latency: Any = units.edge_latency[k]
        if handoff and units.handoff:
            latency = latency + units.handoff * _different(
                model, x[edge.src], x[edge.dst], f"handoff_{k}"
            )
        if edge.ring is None:
            distance: Any = edge.distance
        else:
            distance = depth[edge.ring] - rings[edge.ring].lag
        model.add(t[edge.dst] + ii * distance >= t[edge.src] + latency)
        if edge.ring is None:
            continue
        for group, lit in x[edge.src].items():
            enforce = [lit]
            if group in x[edge.dst]:
                enforce.append(~x[edge.dst][group])
            for j in range(1, groups[group].copies):
                model.add(
                    t[edge.dst] + ii * distance >= t[edge.src] + phase[group][j] + latency
                ).only_enforce_if(enforce)


def _frozen_order(s: _Scope, row: list[Any], x: list[dict[str, Any]]) -> None:
    """Frozen nodes issued by one group keep their listed order (rows non-decreasing)."""
    frozen = [i for i, n in enumerate(s.problem.nodes) if n.frozen]
    for a, i in enumerate(frozen):
        for j in frozen[a + 1 :]:
            for group in x[i]:
                if group in x[j]:
                    s.model.add(row[i] <= row[j]).only_enforce_if([x[i][group], x[j][group]])


def _registers(s: _Scope, stage: list[Any], x: list[dict[str, Any]]) -> list[Any]:
    """Per value the copies its producer's group carries (the iteration arguments of the
    expanded loop), and per group its registers within budget; the copies."""
    model, problem = s.model, s.problem
    copies: list[Any] = []
    load: dict[str, list[Any]] = {g.name: [] for g in problem.groups}
    for k, value in enumerate(problem.values):
        top = problem.max_stage + max((d for _, d in value.uses), default=0)
        spans = [stage[use] + d - stage[value.producer] for use, d in value.uses]
        carried = model.new_int_var(0, top, f"copies_{k}")
        model.add_max_equality(carried, [0, *spans])
        copies.append(carried)
        lits = x[value.producer]
        for group, lit in lits.items():
            term = carried
            if len(lits) > 1:
                term = model.new_int_var(0, top, f"copies_{k}_{group}")
                model.add(term == carried).only_enforce_if(lit)
                model.add(term == 0).only_enforce_if(~lit)
            load[group].append(value.regs * term)
    for group in problem.groups:
        model.add(group.reserved + sum(load[group.name]) <= group.regs)
    return copies


def _objective(
    s: _Scope,
    t: list[Any],
    row: list[Any],
    op_stage: dict[int, Any],
    depth: dict[str, Any],
    copies: list[Any],
) -> None:
    """Minimise the length, then the carried registers, the early nodes' rows and the
    stages, then prefer the deepest rings (the shallowest first), as one weighted sum."""
    model, problem, ii = s.model, s.problem, s.ii
    length = model.new_int_var(0, s.horizon - 1, "length")
    model.add_max_equality(length, t)
    # then the deepest rings shared memory allows, the shallowest first: slots
    # beyond the ones the interval needs absorb latency the model does not see
    top = max((r.max_depth for r in problem.rings), default=0)
    spare_sum = sum(r.max_depth for r in problem.rings)
    shallowest = model.new_int_var(0, top, "shallowest")
    if depth:
        model.add_min_equality(shallowest, list(depth.values()))
    weight = spare_sum + 1
    big = weight * (top + 1) + spare_sum + 1
    # between the two, the fewest stages: of equally long schedules, the one whose
    # ops wrap least into later bodies (no needless prologue and epilogue)
    stages = sum(op_stage.values())
    bigger = big * (len(op_stage) * problem.max_stage + 1)
    # before the stages, the fewest registers carried across bodies (of two equally
    # long schedules, the one that carries the smaller tile)
    carried = sum(v.regs * c for v, c in zip(problem.values, copies, strict=True))
    most = sum(v.regs for v in problem.values) * (problem.max_stage + 2) + 1
    # then the early nodes' rows (the MMAs first in the body)
    early = [row[i] for i, n in enumerate(problem.nodes) if n.early]
    rows = sum(early)
    span = ii * len(early) + 1
    model.minimize(
        length * bigger * span * most
        + carried * bigger * span
        + rows * bigger
        + stages * big
        + weight * (top - shallowest)
        + spare_sum
        - sum(depth.values())
    )


@functools.cache
def _model_class(cp_model: Any) -> type:
    """`cp_model.CpModel` without the camelCase aliases its constructor gives each
    model's methods (unused here, and most of an empty model's cost): the same model."""

    class Model(cp_model.CpModel):
        def _add_pre_pep8_methods(self) -> None:
            pass

    return Model


def _build(
    cp_model: Any,
    problem: Problem,
    units: Units,
    ii: int,
    *,
    registers: bool,
    smem: bool,
    handoff: bool,
    objective: bool,
) -> _Model:
    """The model at II = `ii` units; `registers`, `smem`, `handoff`: whether those
    constraints are in it; `objective`: minimise the length, the carried registers and
    the stages, then prefer deep rings (the module docstring). The steps add their
    variables and constraints in this order (the order is part of the model: CP-SAT's
    search, and so the answer, depends on it)."""
    s = _Scope(_model_class(cp_model)(), problem, units, ii)
    op_stage, stage = _stage_vars(s)
    row, t, x = _node_vars(s, stage)
    phase = _phase_vars(s)
    _shared_units(s, row, x, phase)
    _issue_slots(s, row, x)
    depth = _depth_vars(s)
    _edges(s, t, x, phase, depth, handoff)
    _frozen_order(s, row, x)
    _not_ahead(s, row, stage)
    copies = _registers(s, stage, x) if registers else []
    if smem and problem.rings:
        used = sum(depth[r.name] * r.slot_bytes for r in problem.rings)
        s.model.add(used <= problem.smem_bytes)
    if objective:
        _objective(s, t, row, op_stage, depth, copies)
    return _Model(s.model, t, stage, x, phase, depth, copies)


def _run(cp_model: Any, built: _Model, wall: float, deterministic: float) -> tuple[Any, Any]:
    """Solve with one worker, seed 0 and both time limits; (solver, status)."""
    solver = cp_model.CpSolver()
    parameters = solver.parameters
    parameters.num_workers = 1
    parameters.random_seed = 0
    parameters.max_time_in_seconds = max(wall, 0.01)
    parameters.max_deterministic_time = deterministic
    status = solver.solve(built.model)
    if status == cp_model.MODEL_INVALID:
        raise RuntimeError(f"invalid CP-SAT model: {built.model.validate()}")
    return solver, status


#: A hint at an II: the values a schedule found at it gave `_Model.t`, `stage`, `phase`.
_Hint = tuple[tuple[int, ...], tuple[int, ...], dict[str, tuple[int, ...]]]


def _values(built: _Model, solver: Any) -> _Hint:
    def values(vs: list[Any]) -> tuple[int, ...]:
        return tuple(v if isinstance(v, int) else solver.value(v) for v in vs)

    return values(built.t), values(built.stage), {g: values(p) for g, p in built.phase.items()}


def _hint(built: _Model, found: _Hint) -> None:
    """Start the search from a schedule found at the same II by a less constrained
    model (step 1's: it may break the register or shared-memory limits, CP-SAT repairs
    it)."""
    t, stage, phase = found
    pairs = list(zip(built.t, t, strict=True)) + list(zip(built.stage, stage, strict=True))
    for g, offsets in built.phase.items():
        pairs += [(a, b) for a, b in zip(offsets, phase[g], strict=True)]
    seen: set[int] = set()
    for var, old in pairs:
        if isinstance(var, int) or var.index in seen:
            continue
        seen.add(var.index)
        built.model.add_hint(var, old)


def _precheck(problem: Problem) -> None:
    """Raise Infeasible where a limit is exceeded whatever the schedule."""
    for group in problem.groups:
        if group.reserved > group.regs:
            raise Infeasible(
                f"registers: warp group {group.name} reserves {group.reserved} of its "
                f"{group.regs} registers"
            )
    least = sum((r.max_depth if r.fixed else 1) * r.slot_bytes for r in problem.rings)
    if least > problem.smem_bytes:
        raise Infeasible(
            f"shared memory: the rings need at least {least} bytes, the budget is "
            f"{problem.smem_bytes}"
        )


def _binding(cp_model: Any, problem: Problem, units: Units, ii: int, budget: float) -> str:
    """Which limit makes II = `ii` infeasible: registers, shared memory or handoff."""
    relaxations = (
        ("registers", dict(registers=False, smem=True, handoff=True)),
        ("shared memory", dict(registers=True, smem=False, handoff=True)),
        ("handoff latency", dict(registers=True, smem=True, handoff=False)),
    )
    for name, flags in relaxations:
        built = _build(cp_model, problem, units, ii, objective=False, **flags)
        _, status = _run(cp_model, built, budget, budget)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return name
    return "registers and shared memory together"


#: Deterministic time (CP-SAT's work units) of one feasibility probe, and of the final
#: optimisation at the answer's II. Each call also stops at the wall-time limit; a solve
#: whose calls all end on their deterministic limits is reproducible.
PROBE = 0.1
FINAL = 1.0


@dataclass
class _Search:
    """One solve's probes and what they found: the IIs proven infeasible (by either
    step's model), per II the schedule that hints a probe at it (`hints`, numbered by
    `versions`), each probe's answer by its model, hint and budget (`answers`: one
    asked again is not solved again, the same model giving the same answer)."""

    cp_model: Any
    problem: Problem
    units: Units
    limit: int
    time_limit: float
    begin: float
    infeasible: set[int] = field(default_factory=set)
    undecided: set[int] = field(default_factory=set)
    hints: dict[int, _Hint] = field(default_factory=dict)
    versions: dict[int, int] = field(default_factory=dict)
    answers: dict[tuple, tuple[_Model, Any, Any]] = field(default_factory=dict)

    def running(self) -> bool:
        return time.perf_counter() - self.begin < self.time_limit

    def feasible(self, status: Any) -> bool:
        return status in (self.cp_model.OPTIMAL, self.cp_model.FEASIBLE)

    def hint(self, ii: int, found: _Hint) -> None:
        self.hints[ii] = found
        self.versions[ii] = self.versions.get(ii, 0) + 1

    def probe(self, ii: int, full: bool, budget: float, optimise: bool = False):
        """(model, solver, status) of the model at `ii` (`full`: with registers, shared
        memory and handoff; `optimise`: with the objective), hinted with the schedule
        found at `ii` where there is one."""
        key = (ii, full, budget, optimise, self.versions.get(ii))
        known = self.answers.get(key)
        if known is not None:
            return known
        flags = dict(registers=full, smem=full, handoff=full, objective=optimise)
        built = _build(self.cp_model, self.problem, self.units, ii, **flags)
        if ii in self.hints:
            _hint(built, self.hints[ii])
        wall = self.time_limit - (time.perf_counter() - self.begin)
        solver, status = _run(self.cp_model, built, max(wall, 0.01), budget)
        if self.feasible(status) and (full or ii not in self.hints):
            self.hint(ii, _values(built, solver))  # the full model's replaces step 1's
        if status == self.cp_model.INFEASIBLE:
            self.infeasible.add(ii)
        elif not self.feasible(status):
            self.undecided.add(ii)
        self.answers[key] = (built, solver, status)
        return built, solver, status

    def search(self, lo: int, full: bool):
        """The smallest II >= lo found feasible: lo, then galloping (lo + 1, 2, 4, ..., the limit)
        to a feasible II, then bisecting down to the smallest feasible one the probes
        find (a probe out of time counts as not feasible)."""
        fail, found, step = lo - 1, None, 1
        ii = lo
        while ii <= self.limit and self.running():
            # step 2 starts where step 1 found a schedule (its hint): the likeliest
            # answer gets the larger budget
            got = self.probe(ii, full, FINAL if full and ii == lo else PROBE)
            if self.feasible(got[2]):
                found = (ii, got)
                break
            fail, ii, step = ii, lo + step, step * 2
            if ii > self.limit and fail < self.limit:
                ii = self.limit  # the last gallop lands on the limit, not past it
        if found is None:
            return None
        hi, best = found
        while hi - fail > 1 and self.running():
            mid = (fail + hi) // 2
            got = self.probe(mid, full, PROBE)
            if self.feasible(got[2]):
                hi, best = mid, got
            else:
                fail = mid
        return hi, best


#: Step 1's outcomes (its II, the IIs it proved infeasible, its schedules) by what
#: decides them (`_first`), the last `FIRST_KEPT`.
_FIRSTS: dict[tuple, tuple[int | None, frozenset[int], frozenset[int], dict[int, _Hint]]] = {}
FIRST_KEPT = 256


def _relaxed(problem: Problem) -> Problem:
    """The problem as step 1's models read it: without what only the registers, the
    shared memory, the handoff and the objective read (and the nodes' names)."""
    return replace(
        problem,
        nodes=tuple(replace(n, name="", early=False) for n in problem.nodes),
        groups=tuple(replace(g, regs=0, reserved=0) for g in problem.groups),
        values=(),
        rings=tuple(replace(r, slot_bytes=0) for r in problem.rings),
        smem_bytes=0,
        handoff=0.0,
    )


def _first(s: _Search, mii: int) -> int | None:
    """Step 1's II (None: none up to the limit). Its models are the same for problems
    that differ only in what it does not read (a solve again with more registers
    reserved, or without the staging tiles): its outcome is kept (where it ended within
    the time limit) and reused."""
    key = (_relaxed(s.problem), mii, s.limit, s.time_limit, PROBE)
    known = _FIRSTS.get(key)
    if known is not None:
        ii, infeasible, undecided, hints = known
        s.infeasible |= infeasible
        s.undecided |= undecided
        for x, found in hints.items():
            s.hint(x, found)
        return ii
    found = s.search(mii, False)
    ii = found[0] if found is not None else None
    if s.running():
        while len(_FIRSTS) >= FIRST_KEPT:
            del _FIRSTS[next(iter(_FIRSTS))]
        _FIRSTS[key] = (ii, frozenset(s.infeasible), frozenset(s.undecided), dict(s.hints))
    return ii


def solve(problem: Problem, time_limit: float = 30.0) -> Solution:
    """The schedule of the smallest II found (see the module docstring); raises
    `Infeasible` when no II up to the search limit admits one, `SolverUnavailable`
    without OR-Tools."""
    begin = time.perf_counter()
    cp_model = _cp_model()
    check_problem(problem)
    _precheck(problem)
    scale = problem_scale(problem)
    units = Units.of(problem, scale)
    mii = lower_bound(problem, units)
    limit = search_limit(problem, units, mii)
    search = _Search(cp_model, problem, units, limit, time_limit, begin)
    step1 = _first(search, mii)
    if step1 is None:
        if not search.running():
            raise Infeasible(f"no schedule found within the time limit of {time_limit} s")
        if search.undecided:
            raise Infeasible(
                f"no schedule found at the IIs probed up to {limit * scale} cycles "
                f"({len(search.undecided)} of them undecided within a probe's budget)"
            )
        raise Infeasible(
            f"no II up to {limit * scale} cycles fits the dependences and units in "
            f"{problem.max_stage + 1} stages (frozen nodes in one stage, drain nodes "
            "within their body)"
        )
    second = search.search(step1, True)
    if second is None:
        if not search.running():
            raise Infeasible(f"no schedule found within the time limit of {time_limit} s")
        binding = _binding(cp_model, problem, units, limit, max(time_limit / 4, 1.0))
        raise Infeasible(f"no II up to {limit * scale} cycles fits the {binding}")
    ii = second[0]
    # certify: every II below the answer not yet proven infeasible is probed, lowest
    # first (a probe that finds one feasible lowers the answer; one out of time ends
    # the proof: the status stays "feasible")
    for x in range(mii, ii):
        if x in search.infeasible:
            continue
        if not search.running():
            break
        got = search.probe(x, True, PROBE)
        if search.feasible(got[2]):
            ii, second = x, (x, got)
            break
        if x not in search.infeasible:
            break
    # the final optimisation at that II, with what is left of the budget
    built, solver, status = search.probe(ii, True, FINAL, optimise=True)
    if not search.feasible(status):
        built, solver, status = second[1]
    bound = mii
    while bound in search.infeasible:
        bound += 1

    def value(expr: Any) -> int:
        return expr if isinstance(expr, int) else int(solver.value(expr))

    group = tuple(
        next(g for g, lit in lits.items() if solver.boolean_value(lit)) for lits in built.x
    )
    regs = {g.name: g.reserved for g in problem.groups}
    for v, carried in zip(problem.values, built.copies, strict=True):
        regs[group[v.producer]] += v.regs * value(carried)
    optimal = bound == ii and status == cp_model.OPTIMAL
    return Solution(
        interval=ii * scale,
        scale=scale,
        start=tuple(value(t) * scale for t in built.t),
        stage=tuple(value(s) for s in built.stage),
        group=group,
        phase={g: tuple(value(p) * scale for p in ps) for g, ps in built.phase.items()},
        depth={r: value(d) for r, d in built.depth.items()},
        status="optimal" if optimal else "feasible",
        bound=bound * scale,
        step1_interval=step1 * scale,
        seconds=time.perf_counter() - begin,
        regs=regs,
    )
