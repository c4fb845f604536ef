"""Bounds on a modulo schedule's initiation interval (II), in time units, from the problem
alone: the lower bound MII the search starts at and the largest II it searches."""

from __future__ import annotations

from collections.abc import Sequence

from tawac.schedule.problem import PRIVATE_UNITS, Infeasible, Problem, Units, ring_distance


def _positive_cycle(count: int, arcs: Sequence[tuple[int, int, int, int]], ii: int) -> bool:
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


def recurrence_bound(problem: Problem, units: Units) -> int:
    """The smallest II (units) at which no dependence cycle has positive weight; ring
    edges at their largest distance, edges of negative distance left out."""
    arcs = []
    for edge, latency in zip(problem.edges, units.edge_latency, strict=True):
        distance = ring_distance(problem, edge)
        if distance < 0:
            continue
        arcs.append((edge.src, edge.dst, latency, distance))
    high = sum(a[2] for a in arcs) + 1
    if _positive_cycle(len(problem.nodes), arcs, high):
        raise Infeasible("a dependence cycle of iteration distance 0 has a positive latency")
    low = 1
    while low < high:
        mid = (low + high) // 2
        if _positive_cycle(len(problem.nodes), arcs, mid):
            low = mid + 1
        else:
            high = mid
    return low


def lower_bound(problem: Problem, units: Units) -> int:
    """MII in units: max(each node's occupancy, issue and (drain) latency, per shared unit
    the occupancy of every copy, per warp group the issue of the nodes only it issues,
    the recurrence bound)."""
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
    return max(bound, recurrence_bound(problem, units))


def search_limit(problem: Problem, units: Units, mii: int) -> int:
    """The largest II (units) searched: every node's occupancy (all copies), issue and
    latency, every edge's latency and handoff, one after the other."""
    copies = {g.name: g.copies for g in problem.groups}
    total = sum(
        units.occupancy[i] * max(copies[g] for g in node.groups) + units.issue[i] + units.latency[i]
        for i, node in enumerate(problem.nodes)
    )
    total += sum(units.edge_latency) + units.handoff * len(problem.edges)
    return max(mii, total)
