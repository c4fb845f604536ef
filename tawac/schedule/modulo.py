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
- nodes with the same `n.op` (the parts of one IR op) share their stage; a `frozen`
  node keeps stage 0 and its group's nodes keep their listed order.
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
minimising the iteration's length (the last node's start) and then the ring depths.
Deterministic: one worker, a fixed seed, a deterministic time limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Units no two nodes' occupancy may overlap on (per SM, shared by all warp groups).
SHARED_UNITS = ("tensor", "tma", "mufu", "fma", "shfl")


@dataclass(frozen=True)
class Node:
    """One op (or one part of an op) of the loop body. `op`: the IR op it belongs to
    (parts share it); `groups`: the warp groups that may issue it; `drain`: see the
    module docstring; `frozen`: its stage is 0 and its order in its group fixed."""

    name: str
    op: int
    unit: str
    issue: float
    occupancy: float
    latency: float
    groups: tuple[str, ...]
    drain: bool = False
    frozen: bool = False


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


def solve(problem: Problem, time_limit: float = 30.0) -> Solution:  # pragma: no cover
    raise NotImplementedError
