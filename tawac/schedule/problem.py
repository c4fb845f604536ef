"""The modulo-scheduling problem (`tawac.schedule.modulo`'s input and output) as data:
nodes, edges, values, rings and warp groups of one loop iteration, a solution, and the
problem's durations in the solver's time units."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Units no two nodes' occupancy may overlap on (per SM, shared by all warp groups).
SHARED_UNITS = ("tensor", "tma", "mufu", "fma", "shfl")


@dataclass(frozen=True)
class Node:
    """One op (or one part of an op) of the loop body. `op`: the IR op it belongs to
    (parts share it); `groups`: the warp groups that may issue it; `drain`: see the
    module docstring; `frozen`: it shares one stage with its group's other frozen nodes
    and keeps its order among them."""

    name: str
    op: int
    unit: str
    issue: float
    occupancy: float
    latency: float
    groups: tuple[str, ...]
    drain: bool = False
    frozen: bool = False
    early: bool = False
    """Prefer it early in the body (a small row): an asynchronous op (an MMA) issued
    first keeps its unit fed even when the warp groups drift from the model's phases."""


@dataclass(frozen=True)
class Edge:
    """`dst` of iteration i + distance waits for `src` of iteration i plus `latency`
    cycles (`ring`: the distance is that ring's depth minus its lag)."""

    src: int
    dst: int
    latency: float
    distance: int = 0
    ring: str | None = None


@dataclass(frozen=True)
class Value:
    """A register-resident value `producer` defines (`regs` 32-bit registers per thread of
    its warp group) and its uses: (node, iteration distance)."""

    producer: int
    regs: int
    uses: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Ring:
    """A ring of shared-memory slots (an aref): `slot_bytes` each, release lag `lag`,
    at most `max_depth` slots (`fixed`: exactly `max_depth`)."""

    name: str
    slot_bytes: int
    lag: int = 0
    max_depth: int = 4
    fixed: bool = False


@dataclass(frozen=True)
class Group:
    """A warp group (or `copies` identical ones): its per-thread register budget and the
    registers it needs besides the `Value`s (an MMA's operands in flight, addresses)."""

    name: str
    regs: int
    reserved: int = 0
    copies: int = 1


@dataclass(frozen=True)
class Problem:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    groups: tuple[Group, ...]
    values: tuple[Value, ...] = ()
    rings: tuple[Ring, ...] = ()
    smem_bytes: int = 227 * 1024
    handoff: float = 0.0
    max_stage: int = 3
    same_stage: tuple[tuple[int, int], ...] = ()
    """Pairs of nodes that must share a stage (a slot's `aref.get` and its readers: the
    expanded loop cannot carry a slot to a later body)."""
    not_ahead: tuple[tuple[int, int], ...] = ()
    """Pairs (a, b): where node a is of a later stage than node b, a is not issued ahead
    of b in the body (`row[a] >= row[b]`; the solver's exponentials of a tile against
    the MMAs, `tawac.schedule.solver`)."""


@dataclass(frozen=True)
class Solution:
    """`interval`: II in cycles (a multiple of `scale`); `start`, `stage`, `group` per node;
    `phase` per group (cycles, one per copy); `depth` per ring; `status` "optimal" (II
    proven minimal and the step-2 objective optimal at it) or "feasible"; `bound`: the
    largest II (cycles) proven infeasible plus one scale step, i.e. a lower bound on II;
    `step1_interval`: step 1's II; `seconds`: wall time of both steps."""

    interval: int
    scale: int
    start: tuple[int, ...]
    stage: tuple[int, ...]
    group: tuple[str, ...]
    phase: dict[str, tuple[int, ...]]
    depth: dict[str, int]
    status: str
    bound: int
    step1_interval: int
    seconds: float
    regs: dict[str, int] = field(default_factory=dict)


class Infeasible(Exception):
    """No II up to the search limit admits a schedule (the message says which limit)."""


#: Units every warp group has its own of (no non-overlap across nodes).
PRIVATE_UNITS = ("alu", "sync")

#: `problem_scale` aims at a problem of about this many time units of work.
UNITS_TARGET = 256


def problem_scale(problem: Problem) -> int:
    """Cycles per time unit: the nodes' occupancies and issues fit in about
    `UNITS_TARGET` units."""
    total = sum(n.occupancy + n.issue for n in problem.nodes)
    return max(1, math.ceil(total / UNITS_TARGET - 1e-9))


def to_units(cycles: float, scale: int) -> int:
    """`cycles` in units of `scale` cycles, rounded up (anything positive is >= 1)."""
    if cycles <= 0:
        return 0
    return max(1, math.ceil(cycles / scale - 1e-9))


@dataclass(frozen=True)
class Units:
    """A problem's durations in time units (see `to_units`)."""

    scale: int
    occupancy: tuple[int, ...]
    issue: tuple[int, ...]
    latency: tuple[int, ...]
    edge_latency: tuple[int, ...]
    handoff: int

    @staticmethod
    def of(problem: Problem, scale: int) -> Units:
        return Units(
            scale=scale,
            occupancy=tuple(to_units(n.occupancy, scale) for n in problem.nodes),
            issue=tuple(to_units(n.issue, scale) for n in problem.nodes),
            latency=tuple(to_units(n.latency, scale) for n in problem.nodes),
            edge_latency=tuple(to_units(e.latency, scale) for e in problem.edges),
            handoff=to_units(problem.handoff, scale),
        )


def check_problem(problem: Problem) -> None:
    """Raise ValueError where the problem's parts do not refer to each other correctly."""
    count = len(problem.nodes)
    groups = {g.name for g in problem.groups}
    rings = {r.name for r in problem.rings}
    if len(groups) != len(problem.groups):
        raise ValueError("warp group names must be unique")
    if len(rings) != len(problem.rings):
        raise ValueError("ring names must be unique")
    if problem.max_stage < 0:
        raise ValueError("max_stage must be >= 0")
    for g in problem.groups:
        if g.copies < 1:
            raise ValueError(f"warp group {g.name}: copies must be >= 1")
    for r in problem.rings:
        if r.max_depth < 1:
            raise ValueError(f"ring {r.name}: max_depth must be >= 1")
    for n in problem.nodes:
        if not n.groups:
            raise ValueError(f"node {n.name}: no warp group may issue it")
        unknown = [g for g in n.groups if g not in groups]
        if unknown:
            raise ValueError(f"node {n.name}: unknown warp groups {unknown}")
    for e in problem.edges:
        if not (0 <= e.src < count and 0 <= e.dst < count):
            raise ValueError(f"edge {e}: node index out of range")
        if e.ring is not None and e.ring not in rings:
            raise ValueError(f"edge {e}: unknown ring {e.ring}")
    for v in problem.values:
        if not 0 <= v.producer < count:
            raise ValueError(f"value {v}: producer out of range")
        if any(not 0 <= use < count or distance < 0 for use, distance in v.uses):
            raise ValueError(f"value {v}: use out of range or negative distance")


def ring_distance(problem: Problem, edge: Edge) -> int:
    """An edge's largest iteration distance (a ring edge's at the ring's deepest)."""
    if edge.ring is None:
        return edge.distance
    ring = next(r for r in problem.rings if r.name == edge.ring)
    return ring.max_depth - ring.lag
