"""Planners: the one place where a kernel's schedule is decided.

A planner reads a kernel right after `warp-specialize` (partitions and arefs, nothing
lowered) and returns its whole `Schedule`: roles with warp groups and register budgets,
per aref its ring depth and release lag, the software-pipeline schedule of the consumer's
main loops, consumer turns, the thread block cluster and its multicast operands
(`tawac.schedule.cluster`), and the persistent tile order and grid. The `plan` pass
records it on the kernel; every pass after it applies its part and decides nothing.

`HeuristicPlanner` holds the rules tawac has measured (docs/perf.md); the solver planner
(Twill, `tawac.schedule.solver`) and the auto planner (`tawac.schedule.auto`: both
propose, the cost model picks) implement the same interface.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Protocol

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from tawac.analysis import remat
from tawac.analysis.arefs import looped, per_tile, rereads
from tawac.analysis.grid import decomposition_of, infer_grid, to_attr
from tawac.analysis.kinds import kernel_kind, streams_tiles
from tawac.analysis.loops import carried_values, main_loops, scheduled_ops
from tawac.analysis.mma import (
    can_release_late,
    deferred_dots,
    dots_in,
    rows_problem,
)
from tawac.analysis.program_ids import streams_along_x, work_order
from tawac.analysis.tile_layouts import layout_problem, tile_shapes
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import ArefPlan, LoopPlan, OpPlan, RolePlan, Schedule
from tawac.schedule import loop_plan
from tawac.schedule.chain import chain_problem
from tawac.schedule.check import lags, ops_mismatch, register_problem, target_problem
from tawac.schedule.cluster import plan_cluster
from tawac.schedule.model import schedule_cost
from tawac.schedule.smem import kernel_plan
from tawac.schedule.staging import chunk_buffers, plan_stores
from tawac.schedule.waits import awaited_dots, plan_waits
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions
from tawac.target import HOPPER

# Registers of a producer thread: its code is scalar (a few registers, checked in the
# SASS: max register index 5), the minimum setmaxnreg allows.
PRODUCER_REGS = 24


class Planner(Protocol):
    """Decides the schedule of a partitioned kernel."""

    name: str

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule: ...


# -- registers ------------------------------------------------------------------------------


def _share(left: int, consumer_wgs: int) -> int:
    step = HOPPER.setmaxnreg_step
    return min(HOPPER.setmaxnreg_max, left // max(consumer_wgs, 1) // step * step)


def consumer_budget(consumer_wgs: int, producer_wgs: int = 1, ctas: int = 1) -> int:
    """Registers per consumer thread: what the CTA's share of the register file (`ctas`
    CTAs a SM) leaves over all warp groups after the producers' PRODUCER_REGS, at most
    setmaxnreg's largest value."""
    wgs = consumer_wgs + producer_wgs
    cap = HOPPER.register_cap(wgs, ctas)
    return _share(cap * wgs - PRODUCER_REGS * producer_wgs, consumer_wgs)


def fits_registers(dots: list[tile.DotOp], w: int, ctas: int = 1) -> bool:
    """`w` consumer warp groups at their share of the register file (`ctas` CTAs a SM)
    hold every one of these MMAs' accumulators (`tawac.schedule.check.register_problem`),
    and the kernel's register target leaves ptxas room for them (`target_problem`, with
    one producer warp group)."""
    if register_problem(dots, w, consumer_budget(w, ctas=ctas)) is not None:
        return False
    return target_problem(dots, w + 1, ctas) is None


def choose_consumer_warp_groups(part: aref.PartitionOp, ctas: int = 1) -> int:
    """The most of 3, 2, 1 warp groups that split every MMA tile into whole m64 blocks
    and leave room in registers for each MMA's accumulator (else the fewest that split
    the tiles): more warps per scheduler hide more latency, and a smaller share of the
    tile needs fewer registers per thread."""
    dots = dots_in(part)
    if not dots:
        return _math_warp_groups(part)
    problem = rows_problem(dots, 1)
    if problem is not None:
        raise CompileError(f"cooperative-consumers: {problem[0]}", problem[1])
    splits = [n for n in (3, 2, 1) if rows_problem(dots, n) is None]
    return next((n for n in splits if fits_registers(dots, n, ctas)), splits[-1])


#: Bytes a CTA of a kernel that only streams tiles keeps in flight: enough to cover
#: DRAM latency at its share of bandwidth (3.35 TB/s x ~2 us / 132 SMs is ~50 KB).
STREAM_BYTES = 64 * 1024
#: The deepest ring such a kernel gets.
STREAM_DEPTH = 16


def _streams_tiles_only(kernel: tile.KernelOp, parts: list[aref.PartitionOp]) -> bool:
    """A kernel without MMAs and without loops (a vector add, one row per program): made
    persistent, each CTA walks its programs while the producer streams the next
    programs' tiles through the ring (`_prefetch` deepens it)."""
    if any(isinstance(o, tile.DotOp) for o in kernel.walk()):
        return False
    return not any(isinstance(o, scf.ForOp) for p in parts for o in p.walk())


#: A consumer whose 2-d tiles are all 2 rows gets a warp group a row where one warp group
#: would hold more than this many elements of a tile a thread (2 x 4096 and up). Measured
#: (H200, docs/perf/2026-12-07.md, "a warp group a row"): at 2 x 4096 (64 a thread) two
#: warp groups ran 0.98-1.17x as fast as one for the forward norms and softmax and
#: 1.00-2.39x for the one-read backward; at 2 x 2048 (32 a thread) 0.92-1.02x.
FEW_ROW_ELEMENTS_PER_THREAD = 32


def _math_warp_groups(part: aref.PartitionOp) -> int:
    """A consumer without MMAs holds its 2-d tiles in the accumulator layout (64 rows per
    warp group): the most of 3, 2, 1 warp groups that split every 2-d tile's rows into
    whole 64-row blocks. Where none does, convert-to-ptx holds the tiles in the blocked
    layout (`tawac.target.blocked_tiles`): 2-row tiles with more than
    `FEW_ROW_ELEMENTS_PER_THREAD` elements a thread of one warp group get a warp group a
    row where that layout takes them (twice the warps, half the registers a thread, a
    row's reductions in its warp group), others 1 (a long row is spread over two after
    the planner: `plan_spread`). A consumer of 1-d tiles only gets 1:
    its vectors' runs spread over 128 threads (a 1024-element f32 tile is two runs of 4 a
    thread) and a reduction to a scalar crosses 4 warps."""
    shapes = tile_shapes(part)
    if not shapes:
        return 1
    rows = {r for r, _ in shapes}
    m = HOPPER.mma_m
    whole = next((n for n in (3, 2, 1) if all(r % (m * n) == 0 for r in rows)), 1)
    if whole > 1 or rows != {2}:
        return whole
    most = max(r * c for r, c in shapes) // HOPPER.warp_group_size
    if most <= FEW_ROW_ELEMENTS_PER_THREAD:
        return 1
    # a 2-row tile: a row a warp group, where the blocked layout takes it
    kernel = part.parent_op()  # partitions sit in the kernel's body (warp-specialize)
    if not isinstance(kernel, tile.KernelOp):
        return 1
    if layout_problem(part, 2, kernel, spread=False) is not None:
        return 1
    return 2


def register_budgets(roles: list[tuple[str, int, int]], ctas: int = 1) -> list[RolePlan]:
    """Budgets for (role, warp groups, preset regs or 0): producers PRODUCER_REGS,
    consumers share what is left of the CTA's share of the register file (`ctas` CTAs a
    SM; at most 256)."""
    wgs = sum(w for _, w, _ in roles)
    left = HOPPER.register_cap(wgs, ctas) * wgs
    for role, w, regs in roles:
        if role == "producer":
            left -= (regs or PRODUCER_REGS) * w
    share = _share(left, sum(w for role, w, _ in roles if role == "consumer"))
    return [
        RolePlan(role, w, regs or (PRODUCER_REGS if role == "producer" else share))
        for role, w, regs in roles
    ]


#: The persistent tile order's group of program-id-x values sharing a y (Triton's
#: grouped order, for L2) where the main loops stream data that depends on x (a GEMM's A
#: band). Where they do not (attention's K and V follow the head), the whole x axis is
#: one group (0): the grouped order ran 16-32 heads' K/V at once, 128 MB at 16k keys,
#: and the x-fastest order measured 1.02-1.11x at 16k keys in three runs (docs/perf.md,
#: 2026-11-27).
GROUP_M = 8


# -- rings ----------------------------------------------------------------------------------


#: The ring depth the heuristic aims for where shared memory allows. Measured on the
#: corpus (benchmarks/bench_corpus.py, H100, docs/perf.md 2026-11-25): against 3, depth 4
#: runs 1.13-1.17x faster on every 128x128- and 64x128-tile GEMM and 1.01-1.04x on
#: attention with 64- or 128-key blocks (geomean 1.07x over the 35 programs it changes,
#: none slower beyond 1%); depths 5 and 6 were slower than 4 on all nine GEMMs tried.
PREFERRED_DEPTH = 4

#: The ring depth for a kernel that streams 2-d tiles through loops without MMAs
#: (`streams_tiles`: a row softmax, a norm), where shared memory allows. Measured on the
#: H100 (docs/perf/2026-12-06.md, "Row kernels: ring depth and widening"): softmax, RMS norm
#: and layer norm in 64-row programs with 8 slots ran 1.14-1.45x faster than two programs
#: widened to one 128-row tile with 4 slots (6 for the softmax) at up to 4096 rows, and
#: within 2% at 32768 rows.
ROWS_DEPTH = 8


#: A GEMM's operand ring below this depth, because the epilogue's staging tiles take the
#: shared memory, stages in column chunks instead when that gives a deeper ring: measured
#: on the H100 (docs/perf.md, 2026-11-26), a 128x256 GEMM with a residual epilogue ran
#: 1.05-1.16x faster with 3 slots and one chunk buffer than with 2 slots and a whole
#: staging tile.
MIN_GEMM_DEPTH = 3


def preferred_depth(kernel: tile.KernelOp) -> int:
    """The ring depth the planners aim for: `ROWS_DEPTH` for a kernel that streams 2-d
    tiles without MMAs, else `PREFERRED_DEPTH`."""
    return ROWS_DEPTH if streams_tiles(kernel) else PREFERRED_DEPTH


def ctas_per_sm(kernel: tile.KernelOp, options: PipelineOptions) -> int:
    """How many of the kernel's CTAs share an SM: `--ctas-per-sm`, else 1. Not with
    stream-K, whose workspace holds one slot per CTA of a one-CTA-per-SM launch."""
    ctas = options.ctas_per_sm or 1
    if ctas > 1 and decomposition_of(kernel)["kind"] == "stream_k":
        raise CompileError(
            "plan: ctas-per-sm above 1 is not supported with stream-K (its workspace has "
            "one slot per SM)",
            kernel,
        )
    return ctas


def auto_stages(
    kernel: tile.KernelOp,
    warp_groups: int,
    preferred: int = 0,
    tma_store: bool = True,
    ctas: int = 1,
) -> int:
    """The deepest ring (at most `preferred`; 0: `preferred_depth`) whose shared-memory
    plan, with single-slot
    arefs and the epilogue tiles staged for TMA stores (`warp_groups` consumer warp
    groups), fits in one CTA; else the deepest that fits without the staging tiles (the
    epilogue then goes in chunks, reuses the rings or stores from registers). A GEMM
    whose ring that leaves below `MIN_GEMM_DEPTH` takes the deeper ring where its
    epilogue fits in column chunks beside it. `ctas`: CTAs a SM, whose share of its
    shared memory the plan fits."""
    preferred = preferred or preferred_depth(kernel)
    whole = _deepest(kernel, warp_groups, preferred, True, ctas) if tma_store else 0
    if whole and (whole >= MIN_GEMM_DEPTH or kernel_kind(kernel) != "gemm"):
        return whole
    bare = _deepest(kernel, warp_groups, preferred, False, ctas)
    if not whole:
        return bare
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    depths = {c: bare if looped(c) else 1 for c in creates}
    if bare > whole and chunk_buffers(kernel, depths, warp_groups, ctas):
        return bare
    return whole


def _deepest(
    kernel: tile.KernelOp, warp_groups: int, preferred: int, staging: bool, ctas: int = 1
) -> int:
    """The deepest ring up to `preferred` whose plan fits (with or without the staging
    tiles whole); 0 where none does (1 where only the bare plan is asked and none fits)."""
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    for d in range(preferred, 0, -1):
        depths = {c: d if looped(c) else 1 for c in creates}
        if kernel_plan(kernel, depths, staging, warp_groups=warp_groups, ctas=ctas).fits():
            return d
    return 0 if staging else 1


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


def overlaps_epilogue(
    kernel: tile.KernelOp, parts: Iterable[aref.PartitionOp], loops: Iterable[LoopPlan]
) -> bool:
    """Whether `overlap-epilogue` has an epilogue to put under the next tile's first MMA:
    the consumer's first main loop is expanded in two or more stages (its first MMA is
    issued in a prologue, outside the loop), the consumer stores at its top level, no
    split decomposition (`tile.arrive`) runs, nothing stored is also loaded, and the
    pass's rotation applies to the tile's first MMA (`_first_mma_rotates`)."""
    consumer = next((p for p in parts if p.role.data == "consumer"), None)
    first = next((lp for lp in loops if lp.role == "consumer" and lp.loop == 0), None)
    if consumer is None or first is None or first.stages < 2:
        return False
    stores = [o for o in consumer.body.block.ops if isinstance(o, tile.StoreOp)]
    ops = list(kernel.walk())
    read = {o.operands[0] for o in ops if isinstance(o, tile.LoadOp)}
    split = any(isinstance(o, tile.ArriveOp) for o in ops)
    if not stores or split or any(st.dest in read for st in stores):
        return False
    return _first_mma_rotates(consumer, first)


def _has_dot(op: Operation) -> bool:
    return any(isinstance(o, tile.DotOp) for o in op.walk())


def _first_mma_rotates(consumer: aref.PartitionOp, first: LoopPlan) -> bool:
    """Whether the tile's first MMA is where `overlap-epilogue` can put the previous
    tile's epilogue after it (its `problem`, as the body will be once `persistent` and
    `coarse-pipeline` have run): the consumer's first top-level op with an MMA is a
    `tile.dot`, an `scf.if` with an `else` whose `then` has a `tile.dot` first, or the
    first main loop, expanded in stages (an `scf.if` with an `else`, whose `then` issues
    the prologue's stage-0 ops in the plan's order) whose first stage-0 op with an MMA
    is a `tile.dot`."""
    top = next((o for o in consumer.body.block.ops if _has_dot(o)), None)
    if isinstance(top, tile.DotOp):
        return True
    if isinstance(top, scf.IfOp):
        then = next((o for o in top.true_region.block.ops if _has_dot(o)), None)
        return bool(top.false_region.blocks) and isinstance(then, tile.DotOp)
    loop = main_loops(consumer)[0]
    if top is not loop:
        return False
    sched = scheduled_ops(loop.body.block)
    stage0 = [sched[o.index] for o in first.ops if o.stage == 0 and o.index < len(sched)]
    mma = next((o for o in stage0 if _has_dot(o)), None)
    return isinstance(mma, tile.DotOp)


def _faster(kernel: tile.KernelOp, a: Schedule, b: Schedule, options: PipelineOptions) -> bool:
    """Whether the model's price (`schedule_cost`, the `auto` planner's) of schedule `a`,
    completed as `plan` completes it, is below `b`'s. It decides the heuristic's one
    choice the corpus showed going either way: the coarse pipeline's second slot where
    shared memory is short (H200, same run: attention with a 128x128 bias tile at head dim
    128, 1.40 -> 1.23 ms, priced 5530 -> 4277 cycles; head dim 256 with 64-key blocks,
    0.46 -> 0.50 ms, priced 2984 -> 3362; docs/perf.md)."""
    try:
        ca = schedule_cost(kernel, complete(kernel, a, options))
        cb = schedule_cost(kernel, complete(kernel, b, options))
    except CompileError:
        return False
    return ca is not None and cb is not None and ca < cb


class HeuristicPlanner:
    """Today's measured rules (docs/design/schedule.md, docs/perf.md)."""

    name = "heuristic"

    def plan(self, kernel: tile.KernelOp, options: PipelineOptions) -> Schedule:
        parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
        if not parts:
            raise CompileError("plan: run warp-specialize first", kernel)
        options.check()
        ctas = ctas_per_sm(kernel, options)
        roles = register_budgets(
            [(p.role.data, self._warp_groups(p, options, ctas), p.regs.data) for p in parts],
            ctas,
        )
        creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
        consumer_wgs = sum(r.warp_groups for r in roles if r.role == "consumer")
        stages = options.stages or auto_stages(
            kernel, consumer_wgs, tma_store=options.tma_store, ctas=ctas
        )
        if not 0 <= options.mma_depth < stages or options.mma_depth > HOPPER.mma_max_pending:
            raise CompileError(
                f"pipeline: mma-depth must satisfy 0 <= mma-depth < stages and <= 7 "
                f"(got mma-depth={options.mma_depth}, stages={stages}"
                f"{'' if options.stages else ': the stages that fit in shared memory'}); "
                "otherwise the producer waits for a slot the consumer cannot release yet",
                kernel,
            )
        depths = {c: stages if looped(c) else 1 for c in creates}
        lags = {c: self._lag(c, options.mma_depth) for c in creates}
        plan = self._schedule(kernel, parts, roles, creates, depths, lags, options, ctas)
        if options.stages or not options.coarse_pipeline:
            return plan
        split = self._split_rings(kernel, parts, creates, depths, lags, consumer_wgs, options, ctas)
        if split is None:
            return plan
        other = self._schedule(kernel, parts, roles, creates, split, lags, options, ctas)
        return other if _faster(kernel, other, plan, options) else plan

    def _schedule(
        self,
        kernel: tile.KernelOp,
        parts: list[aref.PartitionOp],
        roles: list[RolePlan],
        creates: list[aref.CreateOp],
        depths: dict,
        lags: dict,
        options: PipelineOptions,
        ctas: int = 1,
    ) -> Schedule:
        """The schedule at the looped rings' `depths` with `ctas` CTAs a SM: the cluster,
        the tile order, the per-tile prefetch and the coarse pipeline follow from them."""
        depths = dict(depths)
        consumer_wgs = sum(r.warp_groups for r in roles if r.role == "consumer")
        cluster, multicast = plan_cluster(kernel, options.cluster)
        persistent = options.persistent and (
            all(main_loops(p) for p in parts) or _streams_tiles_only(kernel, parts)
        )
        tiles = grid = None
        if persistent:
            consumers = [p for p in parts if p.role.data == "consumer"]
            order = next((o for o in map(work_order, consumers) if o is not None), None)
            group = options.group_m or (GROUP_M if streams_along_x(parts) else 0)
            tiles = ("longest_first", order) if order is not None else ("grouped", group)
            grid = to_attr(infer_grid(kernel))
            if options.tile_prefetch:
                stream = _streams_tiles_only(kernel, parts)
                self._prefetch(
                    kernel, creates, depths, consumer_wgs, options.tma_store, stream, ctas
                )
        loops = self._loops(parts, creates, depths, lags) if options.coarse_pipeline else []
        return Schedule(
            roles=tuple(roles),
            arefs=tuple(
                ArefPlan(c.ident or "", depths[c], lags[c], multicast.get(c, ())) for c in creates
            ),
            loops=tuple(loops),
            turns=options.pingpong
            and [r.warp_groups for r in roles if r.role == "consumer"] == [2],
            overlap=options.overlap_epilogue
            and persistent
            and cluster == (1, 1)
            and overlaps_epilogue(kernel, parts, loops),
            cluster=cluster,
            ctas_per_sm=ctas,
            tiles=tiles,
            program_grid=grid,
            planner=self.name,
        )

    def _warp_groups(self, part: aref.PartitionOp, options: PipelineOptions, ctas: int = 1) -> int:
        if part.role.data != "consumer":
            return part.warp_groups.data
        if options.consumer_warp_groups:
            return options.consumer_warp_groups
        return choose_consumer_warp_groups(part, ctas)

    def _lag(self, create: aref.CreateOp, mma_depth: int) -> int:
        """mma-depth for an aref whose slots feed a pure accumulation chain (measured:
        0 is best with two consumer warp groups, docs/perf.md v3), else 0."""
        releases = [u.operation for u in create.result.uses]
        releases = [o for o in releases if isinstance(o, aref.ConsumedOp)]
        if mma_depth and releases and all(can_release_late(o) for o in releases):
            return mma_depth
        return 0

    def _split_rings(
        self,
        kernel: tile.KernelOp,
        parts: list[aref.PartitionOp],
        creates: list[aref.CreateOp],
        depths: dict,
        lags: dict,
        wgs: int,
        options: PipelineOptions,
        ctas: int = 1,
    ) -> dict | None:
        """Where shared memory leaves the looped rings one slot deep: `depths` with a
        second slot for the arefs that a consumer loop's two-stage split reads in its stage
        B (the deferred MMA's operands: attention's V) where it fits, before the per-tile
        prefetch; None where there is none. With one slot the split would deadlock
        (`two_stage_split`) and the loop runs unpipelined, its loads exposed."""
        if any(depths[c] > 1 for c in creates if looped(c)):
            return None
        two = {c.result: 2 if looped(c) else depths[c] for c in creates}
        deferred = deferred_dots(creates, [lags[c] for c in creates])
        by_aref = {c.result: c for c in creates}
        trial = dict(depths)
        for part in parts:
            if part.role.data != "consumer":
                continue
            for loop in main_loops(part):
                found = two_stage_split(loop, deferred, two)
                if found is None:
                    continue
                for op in found[0]:
                    if isinstance(op, aref.GetOp):
                        trial[by_aref[op.aref]] = 2
        if trial == depths:
            return None
        fits = kernel_plan(kernel, trial, options.tma_store, warp_groups=wgs, ctas=ctas).fits()
        return trial if fits else None

    def _prefetch(
        self,
        kernel: tile.KernelOp,
        creates: list[aref.CreateOp],
        depths: dict,
        wgs: int,
        tma_store: bool,
        stream: bool = False,
        ctas: int = 1,
    ) -> None:
        """An aref written once per tile (attention's Q) gets a second slot where shared
        memory allows, so that the producer loads tile t+1's operand while the consumers
        still work on tile t. In a kernel that only streams tiles (`_streams_tiles_only`:
        no MMA, no loop) the producer runs further ahead: as many slots as keep
        `STREAM_BYTES` in flight, up to `STREAM_DEPTH`, where shared memory allows."""
        for c in creates:
            if depths[c] != 1 or not per_tile(c):
                continue
            want = 2
            if stream:
                slot = kernel_plan(kernel, {**depths, c: 2}, tma_store, warp_groups=wgs).end
                slot -= kernel_plan(kernel, depths, tma_store, warp_groups=wgs).end
                want = max(2, min(STREAM_DEPTH, -(-STREAM_BYTES // max(slot, 1))))
            for d in range(want, 1, -1):
                depths[c] = d
                if kernel_plan(kernel, depths, tma_store, warp_groups=wgs, ctas=ctas).fits():
                    break
            else:
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


# -- what follows from the decisions above ---------------------------------------------------


#: A consumer whose 2-d tiles are all one row spreads it over two warp groups (all eight
#: warps side by side along it: `BlockedTileLayout.spanning`) where one warp group would
#: hold at least this many elements of it a thread (1 x 8192 and up; knob `spread_rows`).
#: Measured (H100, docs/perf/2026-12-07.md, "A row over two warp groups"): at 1 x 8192
#: the one-read layer norm backward 1.13-1.19x, the softmax at 131072 columns 1.06x (one
#: CTA a SM: its consumer's math was the limit), the RMS norm backward 0.97-1.00x and the
#: softmax at 4096 x 32768 (two CTAs a SM) 1.00x.
SPREAD_ELEMENTS_PER_THREAD = 64


def plan_spread(kernel: tile.KernelOp, s: Schedule, options: PipelineOptions) -> Schedule:
    """`s` with, in a kernel without MMAs and with `options.spread_rows`, a consumer of
    one warp group whose 2-d tiles are all one row of at least
    `SPREAD_ELEMENTS_PER_THREAD` elements a thread given two, the row across both
    (`tawac.analysis.tile_layouts`: the spanning layout), and every register budget left
    to `complete` again. Applied to what the planner chose, heuristic or solver (neither
    proposes it; the cost model does not price it yet); a count the options give stays."""
    if not options.spread_rows or options.consumer_warp_groups:
        return s
    if any(isinstance(o, tile.DotOp) for o in kernel.walk()):
        return s
    consumer = s.role("consumer")
    parts = [
        p
        for p in kernel.body.block.ops
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    ]
    if consumer is None or consumer.warp_groups != 1 or len(parts) != 1:
        return s
    shapes = tile_shapes(parts[0])
    if not shapes or {r for r, _ in shapes} != {1}:
        return s
    if max(c for _, c in shapes) // HOPPER.warp_group_size < SPREAD_ELEMENTS_PER_THREAD:
        return s
    if layout_problem(parts[0], 2, kernel) is not None:
        return s
    roles = tuple(
        dataclasses.replace(r, warp_groups=2 if r.role == "consumer" else r.warp_groups, regs=0)
        for r in s.roles
    )
    return dataclasses.replace(s, roles=roles)


#: The deepest ring `plan_resident` gives a resident aref: a program's row block stays in
#: the ring where its column blocks are at most this many (64 x 4 KiB slots would not fit
#: in shared memory anyway).
RESIDENT_MAX_DEPTH = 64


def plan_resident(kernel: tile.KernelOp, s: Schedule, options: PipelineOptions) -> Schedule:
    """`s` with, in a kernel without MMAs (`streams_tiles`) and with
    `options.reuse_slots`, every aref whose later loops re-read its first loop's tiles
    (`rereads`: a norm's statistics, then its output) resident (`reuse-slots`), its ring
    as deep as shared memory allows (at most `RESIDENT_MAX_DEPTH`; the depth `--stages`
    gives stays), so that the producer loads a row block once wherever its column blocks
    fit in the ring (a runtime test: the row length is not known here); with
    `options.l2_hints`, its copies and the kernel's stores carry L2 eviction hints for
    the row blocks that do not fit (`ArefPlan.l2`; measured on the H100: the softmax at
    1024 x 131072 1.125x, no change where rows fit, docs/perf/2026-12-07.md)."""
    if not options.reuse_slots or not streams_tiles(kernel):
        return s
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    held = [
        c
        for c in creates
        if (a := s.aref(c.ident)) is not None
        and not a.lag
        and not a.multicast
        and not isinstance(rereads(c), str)
    ]
    consumer = s.role("consumer")
    if not held or consumer is None:
        return s
    depths = {c: _depth(s, c) for c in creates}
    if not options.stages:
        for d in range(RESIDENT_MAX_DEPTH, max(depths[c] for c in held), -1):
            trial = {**depths, **dict.fromkeys(held, d)}
            plan = kernel_plan(
                kernel,
                trial,
                options.tma_store,
                warp_groups=consumer.warp_groups,
                ctas=s.ctas_per_sm,
            )
            if plan.fits():
                depths = trial
                break
    kept = {c.ident: depths[c] for c in held}
    holds = {c.ident: _hold(c, depths[c]) if options.hold_slots else 0 for c in held}
    hints = options.l2_hints
    arefs = tuple(
        dataclasses.replace(a, depth=kept[a.name], resident=True, l2=hints, hold=holds[a.name])
        if a.name in kept
        else a
        for a in s.arefs
    )
    return dataclasses.replace(s, arefs=arefs)


#: The bytes of a resident ring's streamed slots where a program's row block is longer
#: than the ring (`ArefPlan.hold`: its first tiles keep the other slots): at least two
#: slots. The loads the first loop issues past the held tiles have only these slots to
#: run ahead in: 64 KiB is over twice what one SM's share of HBM bandwidth keeps in
#: flight at its latency (about 25 GB/s x 1 us). A prediction, to be measured.
HOLD_STREAM_BYTES = 64 * 1024


def _hold(create: aref.CreateOp, depth: int) -> int:
    """How many of a resident ring's `depth` slots a program's first tiles keep where its
    row block is longer than the ring: all but `HOLD_STREAM_BYTES` of them (at least 2);
    0 (none held) where that would hold fewer slots than it streams: a small hold saves
    little of the later loops' reads, while its numbering costs the consumer registers
    (the RMS norm backward at 8 x 1024, 255 registers, spilled 4 bytes holding 2 of 6)
    and the loads past it run ahead in fewer slots."""
    slot = sum(
        hopper.ring_bytes(hopper.smem_ring_type(p, 1))  # type: ignore[arg-type]
        for p in create.aref_type.payload
    )
    stream = max(2, -(-HOLD_STREAM_BYTES // max(slot, 1)))
    return depth - stream if depth - stream >= stream else 0


#: Registers a consumer thread keeps beside its row-long values (addresses, counters,
#: row statistics, a reduction's partials): `plan_reread` reads slots again where the
#: values held across a reduction and these exceed the budget. ptxas spilled every
#: one-read norm backward whose estimate passed the budget less this (at 8192 columns:
#: 256 and 320 registers against 256 on one warp group, 168-240 on two), and none below.
REREAD_WORKING_SET = 32


def plan_reread(kernel: tile.KernelOp, s: Schedule, options: PipelineOptions) -> Schedule:
    """`s` with, in a kernel without MMAs and with `options.reread_slots`, every aref
    whose slots a consumer block would read again (`tawac.analysis.remat`) marked
    `reread` where that block holds more registers across its row reductions than its
    budget less `REREAD_WORKING_SET` and the rereads hold fewer."""
    if not options.reread_slots or any(isinstance(o, tile.DotOp) for o in kernel.walk()):
        return s
    consumer = s.role("consumer")
    if consumer is None or not consumer.regs:
        return s
    plans = {c.result: s.aref(c.ident) for c in kernel.walk() if isinstance(c, aref.CreateOp)}

    def slot_ok(get: aref.GetOp) -> bool:
        a = plans.get(get.aref)
        return a is not None and not a.resident and not a.lag and not a.multicast

    marked: set[str] = set()
    wgs = consumer.warp_groups
    for r in remat.consumer_plans(kernel, slot_ok):
        held = remat.held_across(r.block, wgs)
        if held + REREAD_WORKING_SET <= consumer.regs:
            continue
        if remat.held_across(r.block, wgs, r) >= held:
            continue
        for g in r.gets:
            create = g.aref.owner
            assert isinstance(create, aref.CreateOp)
            marked.add(create.ident)
    if not marked:
        return s
    arefs = tuple(dataclasses.replace(a, reread=True) if a.name in marked else a for a in s.arefs)
    return dataclasses.replace(s, arefs=arefs)


def complete(kernel: tile.KernelOp, s: Schedule, options: PipelineOptions) -> Schedule:
    """`s` with what follows from its decisions by one rule each, where it does not say
    it already: the waits of every consumer main loop's MMAs (`tawac.schedule.waits`; a
    loop `s` does not list runs in body order), how each consumer store leaves
    (`tawac.schedule.staging`, with `options.tma_store`) and the register budgets left
    undecided (`regs 0`: `register_budgets`), and, with `options.chain_loops`, the
    consumer loops expanded as one pipeline with the next (`tawac.schedule.chain`).
    Planners decide the rest."""
    arefs = lags(kernel, s)
    loops = list(s.loops)
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        for k, loop in enumerate(main_loops(part)):
            lp = loop_plan(s, "consumer", k, loop)
            if lp.waits or ops_mismatch(loop, lp) is not None:
                continue  # as written (`check` says what does not fit the loop)
            if not awaited_dots(loop.body.block, arefs):
                continue
            lp = dataclasses.replace(lp, waits=plan_waits(loop, lp, arefs))
            found = s.loop("consumer", k)
            if found is not None:
                loops[loops.index(found)] = lp
            else:
                loops.append(lp)
    if options.chain_loops:
        loops = _chained(kernel, loops)
    stores = s.stores
    consumer = s.role("consumer")
    if not stores and consumer is not None:
        creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
        depths = {c: _depth(s, c) for c in creates}
        tma = options.tma_store
        stores = plan_stores(kernel, consumer.warp_groups, depths, s.persistent, tma, s.ctas_per_sm)
    roles = s.roles
    if any(not r.regs for r in roles):
        roles = tuple(
            register_budgets([(r.role, r.warp_groups, r.regs) for r in roles], s.ctas_per_sm)
        )
    return dataclasses.replace(s, roles=roles, loops=tuple(loops), stores=stores)


def _chained(kernel: tile.KernelOp, loops: list[LoopPlan]) -> list[LoopPlan]:
    """`loops` with each consumer loop that runs as one pipeline with the next
    (`tawac.schedule.chain`) marked `chained`, a loop in one pair at most."""
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    part = next((p for p in parts if p.role.data == "consumer"), None)
    if part is None:
        return loops
    found = main_loops(part)
    plans = {lp.loop: lp for lp in loops if lp.role == "consumer" and not lp.expanded}
    out = list(loops)
    taken: set[int] = set()
    for k in sorted(plans):
        lp, nxt = plans[k], plans.get(k + 1)
        if lp.chained:  # a given schedule's chain keeps its pair
            taken |= {k, k + 1}
            continue
        if nxt is None or k in taken or k + 1 >= len(found):
            continue
        if chain_problem(found[k], lp, found[k + 1], nxt) is not None:
            continue
        out[out.index(lp)] = dataclasses.replace(lp, chained=True)
        taken |= {k, k + 1}
    return out


def _depth(s: Schedule, create: aref.CreateOp) -> int:
    plan = s.aref(create.ident)
    if plan is not None:
        return plan.depth
    return create.aref_type.depth.data
