"""The solver planner (Twill): a kernel's loop schedule, ring depths and consumer warp
groups from a constraint solver instead of rules.

`SolverPlanner.plan` starts from the heuristic planner's decisions that the solver does
not model (release lags, the persistent tile order, the second slot of per-tile arefs,
turns) and replaces the rest:

1. For each consumer warp-group count the code generator realizes (the splits into whole
   m64 blocks whose MMA accumulators fit in registers; the `--consumer-warp-groups` option
   fixes it), `problem(...)` turns main loop 0 of the producer and of the consumer into a
   `tawac.schedule.modulo.Problem`:
   - nodes: the timeline model's steps (`tawac.schedule.model.loop_lanes` with every op at
     stage 0: the scheduled ops, a reduce split into its fold and its shuffles), costed by
     `tawac.schedule.cost.op_cost` from the target model; the producer's nodes are issued
     by the producer warp group and keep their order (its code is not rewritten: it runs
     ahead of the consumers by the ring depth), the consumer's by the consumer warp groups
     in lockstep (`lockstep`: each runs the body on its share of the rows, and the SM's
     units serve all shares; nothing in the generated code keeps the warp groups at
     different phases, so a schedule that relied on one (the model's `Group.copies`)
     measured up to 0.71x the heuristic's: docs/perf.md);
   - edges: the model's dependences (data, loop-carried, full and empty barriers; an empty
     barrier's distance is the ring's depth minus its lag, a solver variable);
   - registers (`consumer_budget` per thread): every 2-d tile of the consumer's body
     counts once per iteration argument the expanded loop carries it in (the accumulator
     already once), plus the largest tile that is never carried (the one being worked
     on) and `WORKING_SET`; the solver also prefers, of equally fast schedules, the one
     carrying fewer registers;
   - shared memory: each looped aref is a ring with its slot size from the shared-memory
     plan (`tawac.schedule.smem.kernel_plan`); the rest of the plan is fixed.
   A consumer loop whose MMA stays in flight across iterations (a release lag: GEMM's K
   loop) is frozen: it keeps its body order in one stage (`coarse-pipeline` cannot
   rewrite it); so is every loop with `--no-coarse-pipeline`.
2. `tawac.schedule.modulo.solve` finds the smallest interval and the schedule at it. The
   result is cached on disk (`cache_dir()`), keyed by the problem (which holds the loop,
   the target's costs and the options' effects), the time limit and the model's source:
   a kernel compiles the same schedule every time, and solves once.
3. The answer with the smallest interval wins; the heuristic's warp-group count unless
   another is faster by more than `MARGIN`.
4. Arbitration (`_arbitrate`): the timeline model (`tawac.schedule.simulate`, warp groups
   running free and sharing the units) simulates the solver's schedule and the
   heuristic's; the kernel gets the heuristic's (recorded as `kept heuristic`) unless
   the solver's is faster by more than `MARGIN`. Neither model alone predicted the
   measurements (docs/perf/2026-11-23.md).
   Its consumer loop becomes a `LoopPlan` (ops in the order of their row in the modulo
   reservation table, stages relative to the consumer's first), its ring depths the
   arefs' depths, and `solve` records the interval, the status and the bound.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from tawac.analysis.arefs import looped
from tawac.analysis.kinds import streams_tiles, tile_exponentials
from tawac.analysis.loops import main_loops, scheduled_ops
from tawac.analysis.mma import deferred_dots, releasing_dots, rows_problem
from tawac.analysis.pressure import body_readers, loop_pressure, tile_registers
from tawac.analysis.tile_layouts import layout_problem
from tawac.dialects import aref, tile
from tawac.dialects.schedule import ArefPlan, LoopPlan, OpPlan, Schedule, SolveInfo
from tawac.schedule import bounds, modulo
from tawac.schedule import problem as problem_types
from tawac.schedule.check import lags
from tawac.schedule.model import loop_lanes, model_intervals
from tawac.schedule.planner import (
    HeuristicPlanner,
    auto_stages,
    fits_registers,
    register_budgets,
)
from tawac.schedule.simulate import Lane
from tawac.schedule.smem import kernel_plan
from tawac.schedule.waits import plan_waits
from tawac.support.cache import cache_root
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

#: Seconds the solver may take per kernel (both steps, every warp-group count).
TIME_LIMIT = 30.0

#: Registers per consumer thread besides the tiles the model counts (addresses, indices,
#: row vectors, loop counters). Calibrated on ptxas 13.0 (docs/perf/2026-11-23.md): the
#: heuristic's two-stage attention at d64 with three consumer warp groups (160 registers:
#: the O accumulator 32 + the carried P 32 + the S tile in flight 64) assembles without
#: spills, so the rest fits in 32.
WORKING_SET = 32

#: The deepest ring the solver considers.
MAX_DEPTH = 6

#: Stages of the modulo schedule (the consumer's first stage may start late).
MAX_STAGE = 5


def cache_dir() -> Path:
    """Where solved schedules are kept: the `solver` folder of the compile cache
    (`tawac.support.cache.cache_root()`: `$TAWAC_CACHE_DIR`, else `$XDG_CACHE_HOME/tawac`, else
    `~/.cache/tawac`)."""
    return cache_root() / "solver"


def lockstep(step, warp_groups: int) -> tuple[float, float, float]:
    """(issue, occupancy, latency) of a consumer step when its `warp_groups` warp groups
    run the body in lockstep: the unit serves every warp group's share (occupancy times
    W), the result of one share may come after the others' (latency plus (W - 1)
    occupancies), and an op the warp group issues itself (issue = occupancy: FMA, MUFU,
    shuffles) keeps it busy while the unit serves the others. Asynchronous ops (an MMA,
    a TMA copy) issue as before."""
    w = warp_groups
    extra = (w - 1) * step.occupancy
    synchronous = step.issue >= step.occupancy > 0
    issue = step.issue + extra if synchronous else step.issue
    return issue, step.occupancy * w, step.latency + extra


def _frozen(loop, deferred: set[tile.DotOp], options: PipelineOptions) -> bool:
    if not options.coarse_pipeline:
        return True
    return any(o in deferred for o in loop.body.block.ops)


@dataclasses.dataclass
class Built:
    """A problem and what maps its answer back to the kernel."""

    problem: modulo.Problem
    warp_groups: int
    consumer_ops: list[Operation]
    """The consumer loop's scheduled ops (their index is their number)."""
    node_source: list[tuple[str, int]]
    """Per node: its role and the number of its scheduled op."""
    rings: dict[int, str]
    """aref index -> ring name."""
    frozen: bool


def _aref(s: Schedule, create: aref.CreateOp) -> ArefPlan:
    """The plan of `create` in the heuristic's schedule (it plans every aref)."""
    found = s.aref(create.ident)
    assert found is not None
    return found


def _smem(kernel: tile.KernelOp, base: Schedule, staging: bool):
    """Per looped aref its slot bytes, and the bytes left for the rings."""
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    ones = {c: 1 if looped(c) else _aref(base, c).depth for c in creates}
    wgs = base.role("consumer").warp_groups if base.role("consumer") else 1
    ctas = base.ctas_per_sm
    plan1 = kernel_plan(kernel, ones, staging, warp_groups=wgs, ctas=ctas)
    slots: dict[int, int] = {}
    for k, c in enumerate(creates):
        if not looped(c):
            continue
        two = kernel_plan(kernel, {**ones, c: 2}, staging, warp_groups=wgs, ctas=ctas)
        slots[k] = two.end - plan1.end
    fixed = plan1.end - sum(slots.values())
    return slots, plan1.limit - fixed


def _consumer(kernel: tile.KernelOp) -> aref.PartitionOp | None:
    """The kernel's consumer partition; None before `warp-specialize`."""
    return next(
        (
            p
            for p in kernel.body.block.ops
            if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
        ),
        None,
    )


def _consumer_main_loop(kernel: tile.KernelOp) -> scf.ForOp | None:
    """Main loop 0 of the consumer partition; None when the kernel has none."""
    consumer = _consumer(kernel)
    loops = main_loops(consumer) if consumer is not None else []
    return loops[0] if loops else None


def _nodes(
    lanes: list[Lane],
    ops: list[Operation],
    warp_groups: int,
    deferred: set[tile.DotOp],
    frozen: bool,
) -> tuple[list[modulo.Node], dict[tuple[str, int], int], list[tuple[str, int]]]:
    """A node per step of the producer's lane and consumer warp group 0's (the consumer's
    costs in lockstep over `warp_groups`); the node of each (lane, step), and per node its
    role and the number of its scheduled op."""
    nodes: list[modulo.Node] = []
    where: dict[tuple[str, int], int] = {}  # (lane, step) -> node
    source: list[tuple[str, int]] = []
    for lane in lanes:
        role = lane.role
        for j, step in enumerate(lane.steps):
            op = ops[step.source] if role == "consumer" else None
            where[(lane.name, j)] = len(nodes)
            source.append((role, step.source))
            w = warp_groups if role == "consumer" else 1
            issue, occupancy, latency = lockstep(step, w)
            nodes.append(
                modulo.Node(
                    name=f"{role}: {step.label}",
                    op=(0 if role == "producer" else 1000) + step.source,
                    unit=step.unit,
                    issue=issue,
                    occupancy=occupancy,
                    latency=latency,
                    groups=(role,),
                    # an MMA awaited in the loop (not kept in flight by a release lag)
                    # completes within its body: `coarse-pipeline` awaits it before
                    # its first reader or the release of its slots in the same body,
                    # else at the end of the body
                    drain=isinstance(op, tile.DotOp) and op not in deferred,
                    early=isinstance(op, tile.DotOp),
                    frozen=role == "producer" or frozen,
                )
            )
    return nodes, where, source


def _edges(
    lanes: list[Lane],
    nodes: list[modulo.Node],
    where: dict[tuple[str, int], int],
    rings: dict[int, str],
) -> list[modulo.Edge]:
    """An edge per dep between the nodes' steps (the other consumer warp groups' deps are
    their copies'), a ring edge for an empty-barrier wait on a looped aref."""
    edges: list[modulo.Edge] = []
    for lane in lanes:
        for j, step in enumerate(lane.steps):
            for dep in step.deps:
                src_lane = dep.lane or lane.name
                if src_lane.startswith("consumer wg") and src_lane != "consumer wg0":
                    continue  # the copies of warp group 0
                src = where.get((src_lane, dep.step))
                if src is None:
                    continue
                ring = rings.get(dep.ring) if dep.ring is not None else None
                edges.append(
                    modulo.Edge(
                        src,
                        where[(lane.name, j)],
                        nodes[src].latency,
                        0 if ring is not None else dep.distance,
                        ring,
                    )
                )
    return edges


@dataclasses.dataclass(frozen=True)
class _Body:
    """The consumer loop's body, its scheduled ops and their nodes: `number` (op -> its
    number), `first` and `last` (op number -> its first and last node)."""

    block: Block
    ops: list[Operation]
    number: dict[Operation, int]
    first: dict[int, int]
    last: dict[int, int]

    @staticmethod
    def of(block: Block, ops: list[Operation], source: list[tuple[str, int]]) -> _Body:
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for n, (role, s) in enumerate(source):
            if role != "consumer":
                continue
            first.setdefault(s, n)
            last[s] = n
        return _Body(block, ops, {op: k for k, op in enumerate(ops)}, first, last)

    def uses(self, r: SSAValue) -> list[tuple[int, int]]:
        """(node, distance) of every scheduled op reading `r` (`body_readers`)."""
        readers = body_readers(r, self.block, self.number)
        return [(self.first[k], d) for k, d in readers if k in self.first]


def _values(body: _Body, warp_groups: int) -> tuple[list[modulo.Value], int]:
    """The registers of the consumer's 2-d tile values (their producer's last node,
    registers per thread, uses), and the largest tile no iteration argument carries."""
    values: list[modulo.Value] = []
    transient = 0
    for op in body.ops:
        if isinstance(op, aref.GetOp | tile.BroadcastOp) or body.number[op] not in body.last:
            # a slot lives in shared memory; a broadcast row vector is the vector itself
            # in the accumulator layout
            continue
        for r in op.results:
            if not isinstance(r.type, TensorType) or len(r.type.get_shape()) != 2:
                continue  # row vectors: a few registers, within WORKING_SET
            regs = tile_registers(r.type, warp_groups)
            uses = body.uses(r)
            if not any(d for _, d in uses):
                transient = max(transient, regs)
            values.append(modulo.Value(body.last[body.number[op]], regs, tuple(uses)))
    return values, transient


def _same_stage(body: _Body) -> list[tuple[int, int]]:
    """A slot's get and its readers share a stage (a slot is not carried to a later
    body)."""
    same = []
    for op in body.ops:
        if isinstance(op, aref.GetOp) and body.number[op] in body.first:
            for user, _ in body.uses(op.results[0]):
                same.append((body.first[body.number[op]], user))
    return same


def _not_ahead(body: _Body) -> list[tuple[int, int]]:
    """A tile's exponential of a later stage is not issued ahead of an MMA of the body:
    the solver's d64 128x128 attention schedule issued its softmax's `exp2` (stage 1) at
    the head of the body, before the next Q K^T MMA: 2339 cycles per iteration on the
    H100 against 2129 with the `exp2` at the end of its own stage, where the timeline
    model prices both 1809 (docs/perf.md, 2026-11-26, seventh part)."""
    exps, mmas = [], []
    for op in body.ops:
        n = body.number[op]
        if n not in body.first:
            continue
        if isinstance(op, tile.DotOp):
            mmas.append(body.first[n])
        if tile_exponentials(op):
            exps.append(body.first[n])
    return [(e, m) for e in exps for m in mmas]


def _rings(
    rings: dict[int, str], slots: dict[int, int], lags: list[int], depth: int
) -> tuple[modulo.Ring, ...]:
    """The looped arefs as rings: slot bytes, release lag, the deepest depth (`depth`, where
    not 0, fixes it: `--stages N`, or a streaming kernel's; else the solver chooses it)."""
    return tuple(
        modulo.Ring(rings[k], slots[k], lags[k], depth or MAX_DEPTH, fixed=depth > 0)
        for k in sorted(rings)
    )


def _fixed_depth(
    kernel: tile.KernelOp, warp_groups: int, options: PipelineOptions, ctas: int = 1
) -> int:
    """The ring depth the problem fixes: `--stages N`; for a kernel streaming 2-d tiles
    without MMAs the heuristic's (`auto_stages`: its rings are sized by the bytes they keep
    in flight, which the model does not price); else 0, the solver's choice."""
    if options.stages:
        return options.stages
    if streams_tiles(kernel):
        return auto_stages(kernel, warp_groups, tma_store=options.tma_store, ctas=ctas)
    return 0


def _groups(roles, unpipelined: bool, transient: int, extra: int = 0) -> tuple[modulo.Group, ...]:
    """The producer and the consumer with their register budgets; the consumer reserves
    `WORKING_SET`, the largest transient tile and `extra` (what an answer's register
    pressure showed the linear count misses; nothing when unpipelined)."""
    consumer_role = next(r for r in roles if r.role == "consumer")
    return (
        modulo.Group("producer", next(r for r in roles if r.role == "producer").regs),
        modulo.Group(
            "consumer",
            consumer_role.regs,
            0 if unpipelined else WORKING_SET + transient + extra,
        ),
    )


def problem(
    kernel: tile.KernelOp,
    base: Schedule,
    warp_groups: int,
    options: PipelineOptions,
    staging: bool = True,
    unpipelined: bool = False,
    extra: int = 0,
) -> Built | None:
    """The modulo-scheduling problem of main loop 0 with `warp_groups` consumer warp
    groups (module docstring); None when the consumer has no main loop. `unpipelined`:
    the consumer loop frozen and no register limit (it holds what the heuristic's
    unpipelined loop holds); `extra`: registers the consumer reserves besides
    `WORKING_SET` and the transient tile."""
    loop = _consumer_main_loop(kernel)
    if loop is None:
        return None
    roles = register_budgets([("producer", 1, 0), ("consumer", warp_groups, 0)], base.ctas_per_sm)
    flat = dataclasses.replace(base, roles=tuple(roles), loops=())
    lanes = {lane.name: lane for lane in loop_lanes(kernel, flat)}
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    deferred = deferred_dots(creates, [_aref(base, c).lag for c in creates])
    frozen = unpipelined or _frozen(loop, deferred, options)

    kept = [lanes[n] for n in ("producer", "consumer wg0") if n in lanes]
    ops = scheduled_ops(loop.body.block)
    nodes, where, source = _nodes(kept, ops, warp_groups, deferred, frozen)
    rings = {k: f"aref{k}" for k, c in enumerate(creates) if looped(c)}
    edges = _edges(kept, nodes, where, rings)
    body = _Body.of(loop.body.block, ops, source)
    values, transient = _values(body, warp_groups)
    same = _same_stage(body)
    slots, capacity = _smem(kernel, base, staging)
    return Built(
        modulo.Problem(
            nodes=tuple(nodes),
            edges=tuple(edges),
            groups=_groups(roles, unpipelined, transient, extra),
            values=() if unpipelined else tuple(values),
            rings=_rings(
                rings,
                slots,
                [_aref(base, c).lag for c in creates],
                _fixed_depth(kernel, warp_groups, options, base.ctas_per_sm),
            ),
            smem_bytes=capacity,
            max_stage=MAX_STAGE,
            same_stage=tuple(same),
            not_ahead=tuple(_not_ahead(body)),
        ),
        warp_groups,
        ops,
        source,
        rings,
        frozen,
    )


# -- solving, with the disk cache ------------------------------------------------------------


@functools.cache
def _code() -> str:
    """A digest of the model's source (as this process loaded it: the problem, its
    bounds and the model): a changed model never reads an old answer."""
    digest = hashlib.sha256()
    for module in (problem_types, bounds, modulo):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1024)
def _key(p: modulo.Problem, time_limit: float) -> str:
    text = json.dumps(
        {
            "code": _code(),
            "limit": time_limit,
            "problem": dataclasses.asdict(p),
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _load(path: Path) -> modulo.Solution | None:
    try:
        d = json.loads(path.read_text())
        d["start"] = tuple(d["start"])
        d["stage"] = tuple(d["stage"])
        d["group"] = tuple(d["group"])
        d["phase"] = {k: tuple(v) for k, v in d["phase"].items()}
        return modulo.Solution(**d)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs the solve next time


#: The answers this process read or wrote, by their file in the disk cache (a
#: `Solution`, or the message of a "no schedule" answer), the last `ANSWERS_KEPT`.
_ANSWERS: dict[Path, modulo.Solution | str] = {}
ANSWERS_KEPT = 1024


def _remember(path: Path, answer: modulo.Solution | str) -> None:
    while len(_ANSWERS) >= ANSWERS_KEPT:
        del _ANSWERS[next(iter(_ANSWERS))]
    _ANSWERS[path] = answer


def solve_cached(p: modulo.Problem, time_limit: float) -> modulo.Solution:
    """`modulo.solve`, through the disk cache (which keeps "no schedule" answers too:
    raises `modulo.Infeasible` with the message it had); an answer this process read or
    wrote is not read again while its file is there."""
    path = cache_dir() / f"{_key(p, time_limit)}.json"
    known = _ANSWERS.get(path)
    if known is not None and path.exists():
        if isinstance(known, str):
            raise modulo.Infeasible(known)
        return known
    if path.exists():
        try:
            refused = json.loads(path.read_text()).get("infeasible")
        except (OSError, ValueError, AttributeError):
            refused = None
        if refused is not None:
            _remember(path, refused)
            raise modulo.Infeasible(refused)
        found = _load(path)
        if found is not None:
            _remember(path, found)
            return found
    try:
        s = modulo.solve(p, time_limit)
    except modulo.SolverUnavailable as err:
        raise CompileError(f"plan: {err}") from None
    except modulo.Infeasible as err:
        _write(path, {"infeasible": str(err)})
        _remember(path, str(err))
        raise
    _write(path, dataclasses.asdict(s))
    _remember(path, s)
    return s


# -- the planner -----------------------------------------------------------------------------


def _candidates(kernel: tile.KernelOp, options: PipelineOptions, base: Schedule) -> list[int]:
    if options.consumer_warp_groups:
        return [options.consumer_warp_groups]
    dots = [d for d in kernel.walk() if isinstance(d, tile.DotOp)]
    ctas = base.ctas_per_sm
    consumer = _consumer(kernel)
    splits = [
        w
        for w in (1, 2, 3)
        if rows_problem(dots, w) is None
        and fits_registers(dots, w, ctas)
        # a kernel without MMAs: every tile laid out over the w warp groups (a one-row
        # tile is not: its row lies in one warp group)
        and (consumer is None or layout_problem(consumer, w, kernel, spread=False) is None)
    ]
    heuristic = base.role("consumer").warp_groups if base.role("consumer") else 1
    return splits or [heuristic]


def _loop_plan(b: Built, s: modulo.Solution) -> LoopPlan | None:
    """The consumer loop's schedule: ops by their row, stages from the consumer's first;
    None when it is the body order in one stage (nothing to rewrite)."""
    number = {op: k for k, op in enumerate(b.consumer_ops)}
    rows: dict[int, tuple[int, int]] = {}
    for n, (role, k) in enumerate(b.node_source):
        if role != "consumer" or k in rows:
            continue
        rows[k] = (s.start[n] % s.interval, s.stage[n])
    if not rows:
        return None
    low = min(stage for _, stage in rows.values())
    order = sorted(rows, key=lambda k: (rows[k][0], k))
    stage = {k: rows[k][1] - low for k in order}
    # A release first in the body, a stage later, is the same instant as the end of the
    # body before: it moves there (a GEMM's release right after its MMA completes, at
    # the interval's boundary, needs no second stage).
    while (
        isinstance(b.consumer_ops[order[0]], aref.ConsumedOp)
        and stage[order[0]] > 0
        and order[0] != order[-1]
    ):
        k = order.pop(0)
        order.append(k)
        stage[k] -= 1
    # A release later than the stage of the MMAs reading its slot only holds the slot
    # longer (the MMAs drain within their body): it moves to the end of that stage's body.
    for k in list(order):
        op = b.consumer_ops[k]
        if not isinstance(op, aref.ConsumedOp):
            continue
        readers = [number[d] for d in releasing_dots(op) if d in number]
        if readers and stage[k] > max(stage[r] for r in readers):
            order.remove(k)
            order.append(k)
            stage[k] = max(stage[r] for r in readers)
    low = min(stage.values())
    ops = tuple(OpPlan(k, b.consumer_ops[k].name, stage[k] - low) for k in order)
    if order == sorted(rows) and all(o.stage == 0 for o in ops):
        return None
    return LoopPlan("consumer", 0, ops)


#: An answer with other warp groups than the heuristic's must beat it by this fraction
#: of the interval: the model does not see the latency more warps hide, and its
#: intervals are rounded to the solver's time unit.
MARGIN = 0.02


#: Times the solver answers again with more registers reserved (`SolverPlanner._solve`).
REGISTER_ROUNDS = 3


def _excess(kernel: tile.KernelOp, base: Schedule, b: Built, s: modulo.Solution) -> int:
    """Registers per consumer thread by which answer `s`'s loop, in its issue order,
    holds more than the budget: its register pressure (`tawac.analysis.pressure`, which
    sees tiles live together that the model's linear count does not) plus `WORKING_SET`;
    0 when it fits, or when the loop is frozen (its order is the body's)."""
    if b.frozen or not b.problem.values:
        return 0
    loop = _consumer_main_loop(kernel)
    assert loop is not None
    lp = _loop_plan(b, s)
    if lp is not None:
        lp = dataclasses.replace(lp, waits=plan_waits(loop, lp, lags(kernel, base)))
    budget = next(g.regs for g in b.problem.groups if g.name == "consumer")
    peak = loop_pressure(loop, lp, b.warp_groups).peak
    return max(0, peak + WORKING_SET - budget)


def _choose(
    answers: list[tuple[Built, modulo.Solution]], heuristic_w: int
) -> tuple[Built, modulo.Solution] | None:
    """The answer with the smallest interval; the heuristic's warp-group count unless
    another is faster by more than MARGIN."""
    if not answers:
        return None
    best = min(answers, key=lambda a: (a[1].interval, a[0].warp_groups != heuristic_w))
    usual = next((a for a in answers if a[0].warp_groups == heuristic_w), None)
    if usual is not None and usual[1].interval <= best[1].interval * (1 + MARGIN):
        return usual
    return best


def _simulated(kernel: tile.KernelOp, plan: Schedule) -> float | None:
    """The steady state's interval of `plan`'s main loop 0 in the timeline model (None:
    no loop)."""
    intervals = model_intervals(kernel, plan)
    return intervals[0] if intervals else None


class SolverPlanner:
    """Twill's schedules (module docstring)."""

    name = "solver"

    def __init__(self, time_limit: float = TIME_LIMIT):
        self.time_limit = time_limit

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule:
        base = HeuristicPlanner().plan(kernel, options)
        found = self.propose(kernel, options, base)
        if found.solve is None:
            return found
        return self._arbitrate(kernel, base, found)

    def propose(
        self, kernel: tile.KernelOp, options: PipelineOptions, base: Schedule | None = None
    ) -> Schedule:
        """The solver's own schedule (before the timeline model arbitrates)."""
        base = base if base is not None else HeuristicPlanner().plan(kernel, options)
        candidates = _candidates(kernel, options, base)
        heuristic_w = base.role("consumer").warp_groups if base.role("consumer") else 0
        share = self.time_limit / max(len(candidates), 1)
        failures = []
        answers: list[tuple[Built, modulo.Solution]] = []
        for unpipelined in (False, True):
            # unpipelined: when no warp-group count fits the registers pipelined, the
            # loops stay as the heuristic would leave them unpipelined (the solver still
            # decides the rings and the warp groups)
            for w in candidates:
                found = self._solve(kernel, base, w, options, share, unpipelined, failures)
                if found is False:
                    return dataclasses.replace(base, planner=self.name)
                if found is not None:
                    answers.append(found)
            if answers:
                break
        best = _choose(answers, heuristic_w)
        if best is None:
            raise CompileError(
                "plan: the solver found no schedule (" + "; ".join(failures) + ")", kernel
            )
        return self._schedule(kernel, base, *best)

    def _arbitrate(self, kernel: tile.KernelOp, base: Schedule, found: Schedule) -> Schedule:
        """The solver's schedule, unless the heuristic's simulates at least as fast
        (within MARGIN) in the timeline model, whose warp groups run free: the solver's
        model keeps them in lockstep, and neither model alone predicted the measurements
        (docs/perf/2026-11-23.md)."""
        mine = _simulated(kernel, found)
        theirs = _simulated(kernel, base)
        assert found.solve is not None
        if mine is None or theirs is None or mine * (1 + MARGIN) < theirs:
            return found
        solve = dataclasses.replace(found.solve, kept="heuristic")
        return dataclasses.replace(base, planner=self.name, solve=solve)

    def _solve(self, kernel, base, w, options, share, unpipelined, failures):
        """The answer for `w` warp groups: with the epilogue's staging tiles in shared
        memory, else (when shared memory is what is short) without; None when there is
        none, False when the kernel has no main loop. An answer whose loop holds more
        registers than the budget (`_excess`) is solved again with the excess reserved,
        up to `REGISTER_ROUNDS` times."""
        for staging in (True, False):
            extra = 0
            for _ in range(REGISTER_ROUNDS):
                b = problem(kernel, base, w, options, staging, unpipelined, extra)
                if b is None:
                    return False
                try:
                    found = solve_cached(b.problem, share)
                except modulo.Infeasible as err:
                    text = f"{w} consumer warp groups{' unpipelined' if unpipelined else ''}"
                    failures.append(f"{text}: {err}")
                    if "shared memory" not in str(err) or extra:
                        return None
                    break
                over = _excess(kernel, base, b, found)
                if not over:
                    return b, found
                extra += over
            else:
                failures.append(f"{w} consumer warp groups: every answer over the register budget")
                return None
        return None

    def _schedule(
        self, kernel: tile.KernelOp, base: Schedule, b: Built, s: modulo.Solution
    ) -> Schedule:
        roles = register_budgets(
            [
                (r.role, b.warp_groups if r.role == "consumer" else r.warp_groups, 0)
                for r in base.roles
            ],
            base.ctas_per_sm,
        )
        creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
        ring_of = {creates[k].ident: ring for k, ring in b.rings.items()}
        arefs = tuple(
            dataclasses.replace(a, depth=s.depth[ring_of[a.name]]) if a.name in ring_of else a
            for a in base.arefs
        )
        lp = None if b.frozen else _loop_plan(b, s)
        return dataclasses.replace(
            base,
            roles=tuple(roles),
            arefs=arefs,
            loops=(lp,) if lp is not None else (),
            planner=self.name,
            solve=SolveInfo(s.interval, s.status, s.bound),
        )


__all__ = ["SolverPlanner", "problem", "solve_cached", "cache_dir"]
