"""The modulo scheduler (tawac/schedule/modulo.py) on small loops whose optimal II is
computed by hand: recurrence and resource bounds, warp-group copies, register-forced
assignment and stage counts, ring depths and shared memory, frozen nodes, drains."""

from __future__ import annotations

import dataclasses
import sys
import time

import pytest

pytest.importorskip("ortools")

from tawac.schedule.modulo import (  # noqa: E402
    Edge,
    Group,
    Infeasible,
    Node,
    Problem,
    Ring,
    SolverUnavailable,
    Units,
    Value,
    lower_bound,
    problem_scale,
    solve,
)


def _node(name, unit="alu", occupancy=1, issue=1, latency=1, groups=("g",), *, op, **kw):
    return Node(name, op, unit, issue, occupancy, latency, tuple(groups), **kw)


def test_recurrence_bound_loop():
    # a -> b -> c (10 + 10 cycles) and c -> a of the next iteration (10): II = 30.
    nodes = (_node("a", op=0), _node("b", op=1), _node("c", op=2))
    edges = (Edge(0, 1, 10), Edge(1, 2, 10), Edge(2, 0, 10, distance=1))
    problem = Problem(nodes, edges, (Group("g", 255),))
    assert problem_scale(problem) == 1
    assert lower_bound(problem, Units.of(problem, 1)) == 30
    s = solve(problem)
    assert s.interval == 30
    assert s.status == "optimal"
    assert s.bound == 30 and s.step1_interval == 30
    assert s.start == (0, 10, 20)
    assert s.stage == (0, 0, 0)
    assert s.group == ("g", "g", "g")


def _three_mmas(copies: int) -> Problem:
    nodes = tuple(_node(f"mma{i}", "tensor", 10, groups=("mma",), op=i) for i in range(3))
    return Problem(nodes, (), (Group("mma", 255, copies=copies),))


def test_resource_bound_loop():
    s = solve(_three_mmas(1))
    assert s.interval == 30
    assert s.status == "optimal"
    assert sorted(s.start) == [0, 10, 20]
    assert s.phase == {"mma": (0,)}


def test_group_copies_share_the_tensor_unit():
    # Two copies: six 10-cycle MMAs on one tensor core; the shortest iteration puts copy 0
    # at rows 0, 10, 20, so copy 1 must be shifted by exactly 30.
    s = solve(_three_mmas(2))
    assert s.interval == 60
    assert s.status == "optimal"
    assert sorted(s.start) == [0, 10, 20]
    assert s.phase == {"mma": (0, 30)}


def _register_choice(handoff: float = 5.0) -> Problem:
    # n may be issued by "a" or "b"; its value (100 registers) lives one iteration (the
    # use m of the next iteration), so "a" (32 registers) cannot hold it; a handoff to m
    # (on "a") makes "b" the slower choice, which the solver must take anyway.
    nodes = (
        _node("n", groups=("a", "b"), op=0),
        _node("m", groups=("a",), op=1),
        _node("k", "tensor", 40, groups=("a",), op=2),
    )
    return Problem(
        nodes,
        (Edge(0, 1, 10),),
        (Group("a", 32), Group("b", 200)),
        values=(Value(0, 100, ((1, 1),)),),
        handoff=handoff,
    )


def test_registers_force_the_assignment():
    s = solve(_register_choice())
    assert s.interval == 40
    assert s.status == "optimal"
    assert s.group[:2] == ("b", "a")
    assert s.start[:2] == (0, 15)
    assert s.regs == {"a": 0, "b": 100}


def test_without_the_register_limit_the_handoff_decides():
    problem = dataclasses.replace(_register_choice(), groups=(Group("a", 255), Group("b", 200)))
    s = solve(problem)
    assert s.group[:2] == ("a", "a")
    assert s.start[:2] == (0, 10)
    assert s.regs == {"a": 100, "b": 0}


def _carried(regs: int) -> Problem:
    # p's value (100 registers) is read by c 70 cycles later; the tensor node bounds II
    # at 30, where c is 2 stages after p (2 copies: 50 + 200 registers).
    nodes = (
        _node("p", groups=("b",), op=0),
        _node("c", groups=("b",), op=1),
        _node("k", "tensor", 30, groups=("m",), op=2),
    )
    return Problem(
        nodes,
        (Edge(0, 1, 70),),
        (Group("b", regs, reserved=50), Group("m", 255)),
        values=(Value(0, 100, ((1, 0),)),),
    )


def test_carried_value_takes_two_copies():
    s = solve(_carried(255))
    assert s.interval == 30
    assert s.status == "optimal"
    assert s.stage[:2] == (0, 2)
    assert s.start[:2] == (0, 70)
    assert s.regs["b"] == 250


def test_register_limit_lengthens_the_interval():
    # With 200 registers only one copy fits: c at most one stage after p, so
    # row_c + II - row_p >= 70 with rows < II: 2 II - 1 >= 70, II = 36.
    s = solve(_carried(200))
    assert s.step1_interval == 30
    assert s.interval == 36
    assert s.bound == 36
    assert s.status == "optimal"
    assert s.stage[:2] == (0, 1)
    assert s.start[:2] == (0, 70)
    assert s.regs["b"] == 150


def _ring(smem_bytes: int) -> Problem:
    # Producer p (TMA) fills a slot the consumer c reads 500 cycles later; c releases it
    # 100 cycles after it starts, and p of iteration i + depth waits for that release.
    nodes = (
        _node("p", "tma", 10, groups=("p",), op=0),
        _node("c", "tensor", 100, groups=("c",), op=1),
    )
    edges = (Edge(0, 1, 500), Edge(1, 0, 100, ring="kv"))
    return Problem(
        nodes,
        edges,
        (Group("p", 255), Group("c", 255)),
        rings=(Ring("kv", 1000, max_depth=8),),
        smem_bytes=smem_bytes,
        max_stage=6,
    )


def test_ring_depth_covers_the_latency():
    # II = 100 (tensor); II * depth >= 500 + 100: depth 6, all 6000 bytes allow.
    s = solve(_ring(6000))
    assert s.interval == 100
    assert s.status == "optimal"
    assert s.depth == {"kv": 6}
    assert s.start == (0, 500)
    assert s.stage == (0, 5)


def test_shared_memory_limits_the_depth():
    # 5000 bytes: depth <= 5, so 5 II >= 600: II = 120.
    s = solve(_ring(5000))
    assert s.step1_interval == 100
    assert s.interval == 120
    assert s.bound == 120
    assert s.status == "optimal"
    assert s.depth == {"kv": 5}
    assert s.start == (0, 500)


def test_ring_released_by_every_copy():
    # Two consumer copies: copy 1 releases its slot `phase` later, so the depth covers
    # it too. II = 200 (two copies of 100 on the tensor core), phase 100, and
    # 200 * depth >= 500 + 100 + 100: depth 4.
    groups = (Group("p", 255), Group("c", 255, copies=2))
    problem = dataclasses.replace(_ring(4000), groups=groups)
    s = solve(problem)
    assert s.interval == 200
    assert s.phase["c"] == (0, 100)
    assert s.depth == {"kv": 4}
    # three slots cannot cover 500 + 100 + the copy's phase at II = 200: the interval
    # grows past the tensor bound
    s3 = solve(dataclasses.replace(problem, smem_bytes=3000))
    assert s3.depth == {"kv": 3}
    assert s3.interval > 200


def test_spare_shared_memory_deepens_the_rings():
    # Beyond the 6 slots the interval needs, the rings take what shared memory allows
    # (latency the model does not see): 8 slots, the ring's most.
    s = solve(_ring(227 * 1024))
    assert s.interval == 100
    assert s.depth == {"kv": 8}


def _frozen() -> Problem:
    # x feeds f1 20 cycles later; f1, f2, f3 are frozen (one stage, in this order), 5 issue
    # cycles each on one warp group: the issue bound is 4 x 5 = 20, and at II = 20 the
    # frozen nodes take rows 5, 10, 15 of the stage after x's.
    nodes = (
        _node("x", issue=5, op=0),
        *(_node(f"f{i}", issue=5, op=i, frozen=True) for i in (1, 2, 3)),
    )
    return Problem(nodes, (Edge(0, 1, 20),), (Group("g", 255),))


def test_frozen_nodes_share_a_stage_and_keep_their_order():
    s = solve(_frozen())
    assert s.interval == 20
    assert s.status == "optimal"
    assert s.start == (0, 25, 30, 35)
    assert s.stage == (0, 1, 1, 1)


def test_frozen_nodes_keep_their_order_against_the_rows():
    # a back edge f3 -> x (distance 1, latency 5) closes a recurrence through the frozen
    # order: x -> f1 (20), f1 -> f2 -> f3 (5 issue cycles each, in this order), f3 -> x
    # (5): II = 35.
    p = _frozen()
    p = dataclasses.replace(p, edges=(*p.edges, Edge(3, 0, 5, 1)))
    s = solve(p)
    assert s.interval == 35
    rows = [t % s.interval for t in s.start[1:]]
    assert rows == sorted(rows)
    assert len(set(s.stage[1:])) == 1


def _exp_after_mma(not_ahead=()) -> Problem:
    # get -> mma (6 cycles) -> exp (16 cycles), one warp group issuing all three (2 + 1 + 4
    # issue cycles); the tensor node bounds II at 10. The shortest schedule starts them
    # at 0, 6, 22: exp two stages after the MMA, at row 2, ahead of the MMA's row 6 (the
    # softmax's exponential ahead of the next MMA, `tawac.schedule.solver._not_ahead`).
    nodes = (
        _node("get", issue=2, op=0),
        _node("mma", "tensor", 10, op=1),
        _node("exp", issue=4, op=2),
    )
    edges = (Edge(0, 1, 6), Edge(1, 2, 16))
    return Problem(nodes, edges, (Group("g", 255),), not_ahead=not_ahead)


def test_a_later_stage_is_issued_ahead_without_not_ahead():
    s = solve(_exp_after_mma())
    assert s.interval == 10
    assert s.status == "optimal"
    assert s.start == (0, 6, 22)
    assert s.stage == (0, 0, 2)
    rows = [t % s.interval for t in s.start]
    assert rows[2] < rows[1]


def test_not_ahead_keeps_the_later_stage_behind():
    """exp not ahead of the MMA: at II = 10 the MMA cannot share a stage with get (get's
    2 issue cycles, 6 before the MMA, and exp's 4 after it do not fit one body), so it
    moves to stage 1, row 0, and exp to t = 26 (stage 2, row 6): the same II, a longer
    schedule."""
    s = solve(_exp_after_mma(not_ahead=((2, 1),)))
    assert s.interval == 10
    assert s.status == "optimal"
    assert s.start[1:] == (10, 26)
    assert s.stage == (0, 1, 2)
    rows = [t % s.interval for t in s.start]
    assert s.stage[2] > s.stage[1] and rows[2] >= rows[1]


def test_not_ahead_binds_only_the_later_stage():
    # (mma, exp): the MMA is never of a later stage than exp, so the pair changes nothing
    bound = solve(_exp_after_mma(not_ahead=((1, 2),)))
    free = solve(_exp_after_mma())
    assert dataclasses.replace(bound, seconds=0) == dataclasses.replace(free, seconds=0)


def test_drain_completes_within_the_body():
    # Three 10-cycle MMAs bound II at 30; one has latency 40 and is awaited in its body.
    nodes = list(_three_mmas(1).nodes)
    nodes[1] = dataclasses.replace(nodes[1], latency=40, drain=True)
    s = solve(dataclasses.replace(_three_mmas(1), nodes=tuple(nodes)))
    assert s.interval == 40
    assert s.start[1] % s.interval + 40 <= s.interval


def test_scale_rounds_up():
    # 3 x (1000 + 1) cycles of work: 12 cycles a unit, 1000 cycles -> 84 units.
    nodes = tuple(_node(f"m{i}", "tensor", 1000, groups=("g",), op=i) for i in range(3))
    problem = Problem(nodes, (), (Group("g", 255),))
    s = solve(problem)
    assert s.scale == 12
    assert s.interval == 3 * 84 * 12
    assert all(t % 12 == 0 for t in s.start)


def test_deterministic():
    first = solve(_ring(5000))
    second = solve(_ring(5000))
    assert dataclasses.replace(first, seconds=0) == dataclasses.replace(second, seconds=0)


def test_infeasible_names_the_limit():
    with pytest.raises(Infeasible, match="registers"):
        solve(dataclasses.replace(_carried(255), groups=(Group("b", 40, 50), Group("m", 255))))
    with pytest.raises(Infeasible, match="shared memory"):
        solve(_ring(500))


def test_without_ortools(monkeypatch):
    for name in ("ortools", "ortools.sat", "ortools.sat.python", "ortools.sat.python.cp_model"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(SolverUnavailable, match=r"pip install 'tawac\[solver\]'"):
        solve(_three_mmas(1))


# --- the stage window's bound (bounds.window_bound) ------------------------------------------


def _chain(latency: int, max_stage: int, *, same_op: bool = False, groups=("g", "g")) -> Problem:
    # a -> b, `latency` cycles, no recurrence: only the window bounds II
    nodes = (
        _node("a", groups=(groups[0],), op=0),
        _node("b", groups=(groups[1],), op=0 if same_op else 1),
    )
    return Problem(
        nodes,
        (Edge(0, 1, latency),),
        tuple(Group(g, 255) for g in dict.fromkeys(groups)),
        max_stage=max_stage,
        handoff=7.0,
    )


@pytest.mark.parametrize(
    ("latency", "max_stage", "same_op", "groups", "ii"),
    [
        (40, 0, False, ("g", "g"), 41),  # one stage: b starts at t >= 40 < II
        (40, 1, False, ("g", "g"), 21),  # two stages: 40 <= 2 II - 1
        (40, 3, True, ("g", "g"), 41),  # one op: both ends in one stage
        (40, 0, False, ("g", "h"), 48),  # fixed to two groups: the handoff too
    ],
)
def test_the_window_bound_is_the_smallest_interval(latency, max_stage, same_op, groups, ii):
    """The dependences of one iteration fit the stages (and a shared stage's one II):
    MII is the answer itself, so no probe below it is needed to prove it optimal."""
    problem = _chain(latency, max_stage, same_op=same_op, groups=groups)
    units = Units.of(problem, problem_scale(problem))
    assert problem_scale(problem) == 1
    assert lower_bound(problem, units) == ii
    s = solve(problem)
    assert s.interval == ii and s.status == "optimal" and s.bound == ii


def test_the_lower_bound_never_passes_the_answer():
    """MII is a bound: on random problems with frozen nodes, shared stages, rings and
    handoffs it is never above the II the solver proves optimal."""
    import random

    rng = random.Random(7)
    checked = 0
    for _ in range(40):
        count = rng.randint(2, 6)
        groups = ("p", "c")
        nodes = tuple(
            _node(
                f"n{i}",
                rng.choice(["alu", "tensor", "tma"]),
                rng.randint(1, 20),
                groups=(rng.choice(groups),) if rng.random() < 0.7 else groups,
                op=rng.randint(0, count - 1),
                frozen=rng.random() < 0.3,
            )
            for i in range(count)
        )
        edges = tuple(
            Edge(a, b, rng.randint(0, 40), distance=0 if a < b else 1)
            for a in range(count)
            for b in range(count)
            if a != b and rng.random() < 0.3
        )
        problem = Problem(
            nodes,
            edges,
            tuple(Group(g, 255) for g in groups),
            handoff=rng.choice([0.0, 5.0]),
            max_stage=rng.randint(0, 3),
        )
        try:
            s = solve(problem, time_limit=10.0)
        except Infeasible:
            continue
        units = Units.of(problem, s.scale)
        assert lower_bound(problem, units) * s.scale <= s.interval, problem
        checked += 1
    assert checked >= 20


def test_the_gallop_lands_on_the_limit():
    """Galloping from MII (MII + 1, 2, 4, ...) probes the search limit itself where the
    next step would pass it: a problem feasible only near the limit is not missed."""
    from tawac.schedule.modulo import _Search

    probed = []

    class Fake(_Search):
        def probe(self, ii, full, budget, optimise=False):
            probed.append(ii)
            return None, None, "yes" if ii >= 14 else "no"

        def feasible(self, status):
            return status == "yes"

    search = Fake(None, None, None, limit=14, time_limit=10.0, begin=time.perf_counter())
    found = search.search(1, False)
    assert found is not None and found[0] == 14
    assert probed[:6] == [1, 2, 3, 5, 9, 14]
