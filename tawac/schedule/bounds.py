"""Bounds on a modulo schedule's initiation interval (II), in time units, from the problem
alone: the lower bound MII the search starts at and the largest II it searches."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tawac.schedule.problem import PRIVATE_UNITS, Infeasible, Problem, Units, ring_distance

#: `(src, dst, latency, distance)`: `t[dst] - t[src] >= latency - II * distance`.
Arc = tuple[int, int, int, int]


def _positive_cycle(count: int, arcs: Sequence[Arc], ii: int) -> bool:
    """Whether some cycle has positive weight `latency - ii * distance` (Bellman-Ford on
    longest paths from a virtual source)."""
    dist = [0] * count
    for _ in range(count + 1):
        changed = False
        for src, dst, latency, distance in arcs:
            reach = dist[src] + latency - ii * distance
            if reach > dist[dst]:
                dist[dst] = reach
                changed = True
        if not changed:
            return False
    return True


def _edge_arcs(problem: Problem, units: Units, handoffs: bool) -> list[Arc]:
    """The edges as arcs `(src, dst, latency, distance)`, each `t[dst] - t[src] >=
    latency - II * distance`: ring edges at their largest distance, edges of negative
    distance left out; with `handoffs`, the handoff added where both ends are fixed to
    different warp groups."""
    nodes = problem.nodes
    arcs: list[Arc] = []
    for edge, latency in zip(problem.edges, units.edge_latency, strict=True):
        distance = ring_distance(problem, edge)
        if distance < 0:
            continue
        src, dst = set(nodes[edge.src].groups), set(nodes[edge.dst].groups)
        if handoffs and len(src) == 1 and len(dst) == 1 and src != dst:
            latency += units.handoff
        arcs.append((edge.src, edge.dst, latency, distance))
    return arcs


def _smallest(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest II in [lo, hi] that `fits` (monotone: an II that fits, every larger
    one does), by bisection; hi + 1 where none does. `lo` is tried first (the common
    answer)."""
    if fits(lo):
        return lo
    if not fits(hi):
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def recurrence_bound(problem: Problem, units: Units) -> int:
    """The smallest II (units) at which no dependence cycle has positive weight; ring
    edges at their largest distance, edges of negative distance left out."""
    arcs = _edge_arcs(problem, units, handoffs=False)
    high = sum(a[2] for a in arcs) + 1
    count = len(problem.nodes)
    found = _smallest(lambda ii: not _positive_cycle(count, arcs, ii), 1, high)
    if found > high:
        raise Infeasible("a dependence cycle of iteration distance 0 has a positive latency")
    return found


def lower_bound(problem: Problem, units: Units) -> int:
    """MII in units: max(each node's occupancy, issue and (drain) latency, per shared unit
    the occupancy of every copy, per warp group the issue of the nodes only it issues,
    the recurrence bound), raised to `window_bound` where the dependences need more to
    fit the stages."""
    copies = {g.name: g.copies for g in problem.groups}
    bound = 1
    per_unit: dict[str, int] = {}
    per_group: dict[str, int] = {}
    for i, node in enumerate(problem.nodes):
        bound = max(bound, units.occupancy[i], units.issue[i])
        if node.drain:
            bound = max(bound, units.latency[i])
        if node.unit not in PRIVATE_UNITS:
            fewest = min(copies[g] for g in node.groups)
            per_unit[node.unit] = per_unit.get(node.unit, 0) + units.occupancy[i] * fewest
        if len(set(node.groups)) == 1:
            group = node.groups[0]
            per_group[group] = per_group.get(group, 0) + units.issue[i]
    bound = max([bound, *per_unit.values(), *per_group.values()])
    bound = max(bound, recurrence_bound(problem, units))
    return window_bound(problem, units, bound, _total(problem, units))


def _window_arcs(problem: Problem, units: Units) -> tuple[int, list[Arc]]:
    """(vertices, arcs) of the difference constraints every schedule meets, each arc
    `(a, b, latency, distance)` for `t[b] - t[a] >= latency - II * distance`:

    - the edges (ring edges at their largest distance, edges of negative distance left
      out), plus the handoff where both ends are fixed to different warp groups;
    - the window: every start within `[0, (max_stage + 1) II - 1]`, against a vertex z
      (`t[n] >= t[z]`, `t[z] >= t[n] - (max_stage + 1) II + 1`);
    - nodes that share a stage (the parts of one op, a group's frozen nodes, the
      `same_stage` pairs) start within II - 1 of each other: per such set, vertices lo
      and hi with `lo <= t[n] <= hi` and `hi - lo <= II - 1`;
    - a group's frozen nodes fixed to it keep their order: `t[i] <= t[j]` (one stage,
      rows non-decreasing)."""
    nodes = problem.nodes
    count = len(nodes)
    arcs = _edge_arcs(problem, units, handoffs=True)
    span = problem.max_stage + 1
    z = count
    arcs += [(z, n, 0, 0) for n in range(count)]
    arcs += [(n, z, 1, span) for n in range(count)]
    sets: dict[tuple, list[int]] = {}
    for n, node in enumerate(nodes):
        sets.setdefault(("op", node.op), []).append(n)
        if node.frozen:
            sets.setdefault(("frozen", node.groups[0]), []).append(n)
    sets |= {("pair", a, b): [a, b] for a, b in problem.same_stage}
    vertices = count + 1
    for members in sets.values():
        if len(members) < 2:
            continue
        lo, hi = vertices, vertices + 1
        vertices += 2
        arcs += [(lo, n, 0, 0) for n in members] + [(n, hi, 0, 0) for n in members]
        arcs.append((hi, lo, 1, 1))  # lo >= hi - II + 1
    frozen = [n for n, node in enumerate(nodes) if node.frozen and len(set(node.groups)) == 1]
    for k, a in enumerate(frozen):
        arcs += [(a, b, 0, 0) for b in frozen[k + 1 :] if nodes[b].groups[0] == nodes[a].groups[0]]
    return vertices, arcs


def window_bound(problem: Problem, units: Units, lo: int, hi: int) -> int:
    """The smallest II in [lo, hi] at which the difference constraints of `_window_arcs`
    hold (no cycle of positive weight; hi + 1 where none does): the dependences of one
    iteration, with the handoffs fixed groups make, must fit the `max_stage + 1`
    stages, and the nodes that share a stage within one II. Each arc's weight falls as
    II grows, so the smallest is found by bisection."""
    vertices, arcs = _window_arcs(problem, units)
    return _smallest(lambda ii: not _positive_cycle(vertices, arcs, ii), lo, hi)


def _total(problem: Problem, units: Units) -> int:
    """Every node's occupancy (all copies), issue and latency, every edge's latency and
    handoff, one after the other (units)."""
    copies = {g.name: g.copies for g in problem.groups}
    total = sum(
        units.occupancy[i] * max(copies[g] for g in node.groups) + units.issue[i] + units.latency[i]
        for i, node in enumerate(problem.nodes)
    )
    return total + sum(units.edge_latency) + units.handoff * len(problem.edges)


def search_limit(problem: Problem, units: Units, mii: int) -> int:
    """The largest II (units) searched: `_total` (one stage fits everything at that II
    unless registers, shared memory, `max_stage` or zero-distance cycles forbid it), or
    MII where that is larger."""
    return max(mii, _total(problem, units))
