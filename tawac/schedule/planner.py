"""Planners: the one place where a kernel's schedule is decided.

A planner reads a kernel right after `warp-specialize` (partitions and arefs, nothing
lowered) and returns its whole `Schedule`: roles with warp groups and register budgets,
per aref its ring depth and release lag, the software-pipeline schedule of the consumer's
main loops, consumer turns, the thread block cluster and its multicast operands
(`tawac.schedule.cluster`), and the persistent tile order and grid. The `plan` pass
records it on the kernel; every pass after it applies its part and decides nothing.

`HeuristicPlanner` holds the rules tawac has measured (docs/perf.md); a solver planner
(Twill) implements the same interface.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from xdsl.dialects import scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from tawac.backend_ptx import abi
from tawac.diagnostics import CompileError
from tawac.dialects import aref, tile
from tawac.dialects.schedule import ArefPlan, LoopPlan, OpPlan, RolePlan, Schedule
from tawac.options import PipelineOptions
from tawac.schedule.cluster import depends_on_program_id, plan_cluster
from tawac.schedule.loops import carried_values, main_loops, scheduled_ops
from tawac.schedule.smem import chunk_ring_fits, kernel_plan, staged_stores
from tawac.target import HOPPER

# Registers of a producer thread: its code is scalar (a few registers, checked in the
# SASS: max register index 5), the minimum setmaxnreg allows.
PRODUCER_REGS = 24

# Registers a consumer thread needs beside one MMA's accumulator fragment, which ptxas
# must hold in registers all at once (it cannot spill a wgmma's operands). Measured with
# ptxas 13.0 at 160 registers: fragments of 96 registers (m64n192 f32) assemble, 112
# (m64n224) fail with C7602 "Insufficient registers", in GEMMs and in attention alike.
MMA_RESERVE = 64


class Planner(Protocol):
    """Decides the schedule of a partitioned kernel."""

    name: str

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule: ...


# -- registers ------------------------------------------------------------------------------


def _share(left: int, consumer_wgs: int) -> int:
    step = HOPPER.setmaxnreg_step
    return min(HOPPER.setmaxnreg_max, left // max(consumer_wgs, 1) // step * step)


def consumer_budget(consumer_wgs: int, producer_wgs: int = 1) -> int:
    """Registers per consumer thread: what the register file leaves over all warp groups
    after the producers' PRODUCER_REGS, at most setmaxnreg's largest value."""
    wgs = consumer_wgs + producer_wgs
    return _share(HOPPER.register_cap(wgs) * wgs - PRODUCER_REGS * producer_wgs, consumer_wgs)


def fragment_registers(dot: tile.DotOp) -> int:
    """32-bit registers per thread of one m64nN wgmma's accumulator (N at most 256):
    64 x N values over the warp group's 128 threads."""
    n = min(dot.mnk()[1], HOPPER.mma_max_n)
    bits = dot.result.type.element_type.bitwidth
    return HOPPER.mma_m * n * bits // 32 // HOPPER.warp_group_size


def register_problem(dots: list[tile.DotOp], w: int) -> str | None:
    """Why `w` consumer warp groups cannot hold these MMAs' accumulators, or None."""
    worst = max(dots, key=fragment_registers, default=None)
    if worst is None:
        return None
    need, budget = fragment_registers(worst), consumer_budget(w)
    if need + MMA_RESERVE <= budget:
        return None
    return (
        f"an MMA with {worst.mnk()[1]} columns keeps {need} accumulator registers per "
        f"thread in flight; {w} consumer warp groups get {budget} registers each, room "
        f"for at most {budget - MMA_RESERVE}"
    )


def choose_consumer_warp_groups(part: aref.PartitionOp) -> int:
    """The most of 3, 2, 1 warp groups that split every MMA tile into whole m64 blocks
    and leave room in registers for each MMA's accumulator (else the fewest that split
    the tiles): more warps per scheduler hide more latency, and a smaller share of the
    tile needs fewer registers per thread."""
    dots = [d for d in part.walk() if isinstance(d, tile.DotOp)]
    for dot in dots:
        m = dot.mnk()[0]
        if m % 64:
            raise CompileError(
                f"cooperative-consumers: a {m}-row MMA tile is not a multiple of 64 rows "
                "(one wgmma instruction covers 64)",
                dot,
            )
    splits = [n for n in (3, 2, 1) if all(d.mnk()[0] % (64 * n) == 0 for d in dots)]
    return next((n for n in splits if register_problem(dots, n) is None), splits[-1])


def register_budgets(roles: list[tuple[str, int, int]]) -> list[RolePlan]:
    """Budgets for (role, warp groups, preset regs or 0): producers PRODUCER_REGS,
    consumers share what is left of the register file (at most 256)."""
    wgs = sum(w for _, w, _ in roles)
    left = HOPPER.register_cap(wgs) * wgs
    for role, w, regs in roles:
        if role == "producer":
            left -= (regs or PRODUCER_REGS) * w
    share = _share(left, sum(w for role, w, _ in roles if role == "consumer"))
    return [
        RolePlan(role, w, regs or (PRODUCER_REGS if role == "producer" else share))
        for role, w, regs in roles
    ]


# -- rings ----------------------------------------------------------------------------------


def _in_loop(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, aref.PartitionOp):
        if isinstance(parent, scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


def looped(create: aref.CreateOp) -> bool:
    """The aref is written in a loop (it needs a ring deeper than one slot)."""
    return any(
        isinstance(u.operation, aref.PutOp) and _in_loop(u.operation) for u in create.result.uses
    )


def auto_stages(kernel: tile.KernelOp, preferred: int = 3) -> int:
    """The deepest ring (at most `preferred`) whose shared-memory plan, with single-slot
    arefs and the 16-bit epilogue tiles staged for TMA stores, fits in one CTA; else the
    deepest that fits without the staging tiles (the epilogue then reuses the rings or
    stores from registers)."""
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    for staging in (True, False):
        for d in range(preferred, 0, -1):
            plan = kernel_plan(kernel, {c: d if looped(c) else 1 for c in creates}, staging)
            if plan.fits():
                return d
    return 1


def staging_chunks(kernel: tile.KernelOp, depths: dict[aref.CreateOp, int]) -> int:
    """The schedule's `staging`: 0 (whole staging tiles) where they fit beside the rings at
    `depths`; else a ring of 2, or 1, column-chunk buffers per epilogue store where that
    fits (a deeper ring for the main loop, the epilogue in turns of 64 columns); else 0
    (`tma-store` then reuses the rings or stores from registers)."""
    values = [st.value.type for st in staged_stores(kernel)]
    if not values or kernel_plan(kernel, depths).fits():
        return 0
    for n in (2, 1):
        fits = all(isinstance(v, TensorType) and chunk_ring_fits(v, n) for v in values)
        if fits and kernel_plan(kernel, depths, chunks=n).fits():
            return n
    return 0


def accumulates(dot: tile.DotOp, body: Block) -> bool:
    """Whether `dot` is a pure MMA accumulation chain: its result only goes to the yield,
    and the iter arg it is yielded into is only this dot's accumulator.  Only then may
    the MMA stay in flight across the back edge (wgmma accumulates in place; any other
    reader, such as attention's rescale O * alpha, needs the result awaited)."""
    uses = list(dot.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, scf.YieldOp):
        return False
    arg = body.args[1 + uses[0].index]
    return [(u.operation, u.index) for u in arg.uses] == [(dot, 2)]


def releasing_dots(consumed: aref.ConsumedOp) -> list[tile.DotOp]:
    """The dots in `consumed`'s block that read a slot of its aref."""
    block = consumed.parent_block()
    assert block is not None
    return [
        op
        for op in block.ops
        if isinstance(op, tile.DotOp)
        and any(
            isinstance(v.owner, aref.GetOp) and v.owner.aref == consumed.aref
            for v in (op.lhs, op.rhs)
        )
    ]


def deferred_dots(creates: list[aref.CreateOp], lags: list[int]) -> set[tile.DotOp]:
    """The dots that stay in flight across iterations: those reading a slot of an aref
    released with a lag."""
    out: set[tile.DotOp] = set()
    for c, lag in zip(creates, lags, strict=True):
        if not lag:
            continue
        for use in c.result.uses:
            if isinstance(use.operation, aref.ConsumedOp):
                out.update(releasing_dots(use.operation))
    return out


def can_release_late(consumed: aref.ConsumedOp) -> bool:
    """The slot may be released some iterations after its use: the loop's one MMA on it
    is a pure accumulation chain (GEMM's K loop), whose wgmmas may stay in flight."""
    block = consumed.parent_block()
    assert block is not None
    dots = releasing_dots(consumed)
    return (
        isinstance(block.parent_op(), scf.ForOp) and len(dots) == 1 and accumulates(dots[0], block)
    )


def _per_tile(create: aref.CreateOp) -> bool:
    """Written, read and released once per program, at the partition's top level."""
    slots = [
        u.operation
        for u in create.result.uses
        if isinstance(u.operation, aref.PutOp | aref.GetOp | aref.ConsumedOp)
    ]
    return all(isinstance(o.parent_op(), aref.PartitionOp) for o in slots)


# -- persistent tile order ------------------------------------------------------------------


def work_order(part: aref.PartitionOp) -> str | None:
    """How a tile's work varies with program id x, from its main loops' bounds: "up" when
    an upper bound follows x (causal attention's key loop ends at the diagonal), "down"
    when only a lower bound does, None when neither."""
    loops = main_loops(part)
    if any(depends_on_program_id(lp.ub, 0) for lp in loops):
        return "up"
    if any(depends_on_program_id(lp.lb, 0) for lp in loops):
        return "down"
    return None


# -- the loop schedule: coarse pipelining (Tawa 4.7, FlashAttention-3's overlap) ---------------


def two_stage_split(
    loop: scf.ForOp, deferred: set[tile.DotOp], depths: dict[SSAValue, int]
) -> tuple[set[Operation], Operation] | None:
    """Stage B of a consumer loop whose body ends in an accumulating MMA (a dot into an
    iter arg, awaited and yielded back: attention's O = O * alpha + P V): the ops
    depending on that iter arg, the gets and broadcasts only they use, and the releases
    of those gets; with stage A's first MMA, after which stage B's MMA of the previous
    iteration is issued. None when the loop has no such split (`deferred`: dots whose
    wait keeps groups in flight; `depths`: planned ring depth of each aref)."""
    body = loop.body.block
    yield_op = body.last_op
    if not isinstance(yield_op, scf.YieldOp):
        return None
    for i, arg in enumerate(body.args[1:]):
        found = _split_at(loop, i, arg, yield_op, deferred, depths)
        if found is None:
            continue
        stage_b, cut = found
        if carried_values(body, stage_b, i) is None:
            continue
        return stage_b, cut
    return None


def _split_at(
    loop: scf.ForOp,
    i: int,
    arg: SSAValue,
    yield_op: scf.YieldOp,
    deferred: set[tile.DotOp],
    depths: dict[SSAValue, int],
) -> tuple[set[Operation], Operation] | None:
    body = loop.body.block
    ops = list(body.ops)
    stage_b: set[Operation] = set()
    work = [arg]
    while work:
        v = work.pop()
        for use in v.uses:
            top = body.find_ancestor_op_in_block(use.operation)
            if top is None or top is yield_op or top in stage_b:
                continue
            stage_b.add(top)
            work.extend(top.results)
    mmas = [o for o in stage_b if isinstance(o, tile.DotOp)]
    if len(mmas) != 1:
        return None
    mma = mmas[0]
    # awaited (not kept in flight) and yielded back into the same iter arg
    if mma in deferred or [(u.operation, u.index) for u in mma.result.uses] != [(yield_op, i)]:
        return None
    for op in reversed(ops):
        if op in stage_b or not isinstance(op, aref.GetOp | tile.BroadcastOp):
            continue
        users = [body.find_ancestor_op_in_block(u.operation) for r in op.results for u in r.uses]
        if users and all(u in stage_b for u in users):
            stage_b.add(op)
    gets = [o for o in stage_b if isinstance(o, aref.GetOp)]
    if any(depths.get(g.aref, 1) < 2 for g in gets):
        # its slot j-1 is still held while the producer must fill slot j: one slot
        # would deadlock
        return None
    for op in ops:
        if isinstance(op, aref.ConsumedOp) and any(g.aref == op.aref for g in gets):
            if ops.index(op) < ops.index(mma):
                return None
            stage_b.add(op)
    if any(isinstance(o, scf.YieldOp) or o.regions for o in stage_b):
        return None
    cuts = [o for o in ops if o not in stage_b and isinstance(o, tile.DotOp)]
    if not cuts:
        return None
    return stage_b, cuts[0]


def two_stage_plan(
    role: str, index: int, loop: scf.ForOp, stage_b: set[Operation], cut: Operation
) -> LoopPlan:
    """The issue order of a two-stage split: stage A up to its first MMA, stage B up to
    its MMA (of the previous iteration), the rest of stage A, the rest of stage B."""
    sched = scheduled_ops(loop.body.block)
    number = {op: n for n, op in enumerate(sched)}
    a = [o for o in sched if o not in stage_b]
    b = [o for o in sched if o in stage_b]
    mma = next(o for o in b if isinstance(o, tile.DotOp))
    b_issue, b_finish = b[: b.index(mma) + 1], b[b.index(mma) + 1 :]
    head, tail = a[: a.index(cut) + 1], a[a.index(cut) + 1 :]
    order = [(o, 0) for o in head] + [(o, 1) for o in b_issue]
    order += [(o, 0) for o in tail] + [(o, 1) for o in b_finish]
    return LoopPlan(role, index, tuple(OpPlan(number[o], o.name, s) for o, s in order))


# -- the heuristic planner ------------------------------------------------------------------


class HeuristicPlanner:
    """Today's measured rules (docs/design.md, docs/perf.md)."""

    name = "heuristic"

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule:
        parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
        if not parts:
            raise CompileError("plan: run warp-specialize first", kernel)
        options.check()
        roles = register_budgets(
            [(p.role.data, self._warp_groups(p, options), p.regs.data) for p in parts]
        )
        creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
        stages = options.stages or auto_stages(kernel)
        if not 0 <= options.mma_depth < stages or options.mma_depth > HOPPER.mma_max_pending:
            raise CompileError(
                f"pipeline: mma-depth must satisfy 0 <= mma-depth < stages and <= 7 "
                f"(got mma-depth={options.mma_depth}, stages={stages}); otherwise the "
                "producer waits for a slot the consumer cannot release yet"
            )
        depths = {c: stages if looped(c) else 1 for c in creates}
        lags = {c: self._lag(c, options.mma_depth) for c in creates}
        cluster, multicast = plan_cluster(kernel, options.cluster)
        persistent = options.persistent and all(main_loops(p) for p in parts)
        tiles = grid = None
        if persistent:
            consumers = [p for p in parts if p.role.data == "consumer"]
            order = next((o for o in map(work_order, consumers) if o is not None), None)
            tiles = ("longest_first", order) if order is not None else ("grouped", options.group_m)
            grid = abi.to_attr(abi.infer_grid(kernel))
            if options.tile_prefetch:
                self._prefetch(kernel, creates, depths)
        staging = staging_chunks(kernel, depths)
        loops = self._loops(parts, creates, depths, lags) if options.coarse_pipeline else []
        consumer_wgs = [r.warp_groups for r in roles if r.role == "consumer"]
        return Schedule(
            roles=tuple(roles),
            arefs=tuple(ArefPlan(depths[c], lags[c], multicast.get(c, ())) for c in creates),
            loops=tuple(loops),
            turns=options.pingpong and consumer_wgs == [2],
            cluster=cluster,
            tiles=tiles,
            program_grid=grid,
            staging=staging,
            planner=self.name,
        )

    def _warp_groups(self, part: aref.PartitionOp, options: PipelineOptions) -> int:
        if part.role.data != "consumer":
            return part.warp_groups.data
        if options.consumer_warp_groups:
            return options.consumer_warp_groups
        return choose_consumer_warp_groups(part)

    def _lag(self, create: aref.CreateOp, mma_depth: int) -> int:
        """mma-depth for an aref whose slots feed a pure accumulation chain (measured:
        0 is best with two consumer warp groups, docs/perf.md v3), else 0."""
        releases = [u.operation for u in create.result.uses]
        releases = [o for o in releases if isinstance(o, aref.ConsumedOp)]
        if mma_depth and releases and all(can_release_late(o) for o in releases):
            return mma_depth
        return 0

    def _prefetch(self, kernel: tile.KernelOp, creates: list[aref.CreateOp], depths: dict) -> None:
        """An aref written once per tile (attention's Q) gets a second slot where shared
        memory allows, so that the producer loads tile t+1's operand while the consumers
        still work on tile t."""
        for c in creates:
            if depths[c] != 1 or not _per_tile(c):
                continue
            depths[c] = 2
            if not kernel_plan(kernel, depths).fits():
                depths[c] = 1

    def _loops(
        self,
        parts: Iterable[aref.PartitionOp],
        creates: list[aref.CreateOp],
        depths: dict,
        lags: dict,
    ) -> list[LoopPlan]:
        deferred = deferred_dots(creates, [lags[c] for c in creates])
        ring = {c.result: depths[c] for c in creates}
        plans = []
        for part in parts:
            if part.role.data != "consumer":
                continue
            for k, loop in enumerate(main_loops(part)):
                found = two_stage_split(loop, deferred, ring)
                if found is not None:
                    plans.append(two_stage_plan(part.role.data, k, loop, *found))
        return plans


PLANNERS: dict[str, Planner] = {"heuristic": HeuristicPlanner()}


def get_planner(name: str) -> Planner:
    if name == "solver" and name not in PLANNERS:
        from tawac.schedule.solver import SolverPlanner

        PLANNERS[name] = SolverPlanner()
    planner = PLANNERS.get(name)
    if planner is None:
        known = ", ".join(dict.fromkeys([*PLANNERS, "solver"]))
        raise CompileError(f"unknown planner '{name}' (known: {known})")
    return planner
