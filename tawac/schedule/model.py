"""The steady state of a kernel's main loops as the timeline simulator's lanes.

`loop_lanes(kernel, plan)` reads the kernel as `plan` leaves it (after `warp-specialize`
and the planner, before `pipeline` applies the schedule) and builds the
`tawac.schedule.simulate` lanes of the producer's and the consumer's main loop 0 (the
streaming loops):

- one lane "producer" (its warp groups act as one) and one lane per consumer warp group,
  "consumer wg0", "consumer wg1", ... (`plan.role("consumer").warp_groups`);
- each lane's steps are the loop's scheduled ops (`tawac.analysis.loops.scheduled_ops`) in
  the schedule's issue order, each with its stage (`plan.loop(role, 0)`; a loop the
  schedule does not list runs its ops at stage 0 in body order), costed by
  `tawac.schedule.cost.op_cost` with the consumer's warp-group count for consumer ops (a
  warp group works on its share of the rows) and 1 for the producer's;
- an op whose cost has `parts` on several units (`tile.reduce`: the in-thread fold on the
  FMA pipe, then the shuffle rounds; `math.exp`, `arith.divf`) becomes one step per part,
  each part waiting for the one before; its users wait for the last part. `scf.if` (the
  masking of a ragged tile) stays one step: its parts all run on the FMA pipe, priced as
  if the branch were taken (`cost.py`);
- deps: SSA use-def between scheduled ops of one body (distance 0: the simulator's stage
  rule puts the iterations right, a step of stage s in trip i works on iteration i - s),
  also for values used inside an op's regions; loop-carried values through `scf.yield`
  and the iteration arguments (distance 1: the running max and sum; an MMA accumulating
  into the previous iteration's MMA result does not wait for it: the tensor core chains
  them in issue order);
  the aref barriers: a consumer `aref.get` of aref r waits for the producer's `aref.put`
  of r on the same iteration ("full %r", the put's latency is the TMA transfer); with
  ring depth D and release lag L (`plan.aref(name)`, the plan of r's `aref.create` by
  its identity), the `aref.consumed` of r in iteration i releases the slot of iteration
  i - L once the MMA reading it is done, so it waits (distance L) for the ops that read
  the values `aref.get` returned, and the producer's `aref.put` of r in iteration j waits
  for the release of iteration j - D, given by every consumer lane's `aref.consumed` of
  iteration j - D + L: distance D - L ("empty %r"; `pipeline` guarantees L < D);
- the tensor core, TMA, MUFU, FMA and shuffle units are per SM: the simulator shares them
  between the lanes (two consumer warp groups' dots queue on one tensor core);
- ptxas spreads a consumer's exponentials between the wgmma instructions of the MMA
  issued before them when they do not need its result (the SASS of the solver's
  attention schedules: `1 HGMMA, 8 EX2, 1 HGMMA, ...`), so that MMA holds the tensor
  core for `target.mma_mufu_hold` of their issue time on top of its own (`hold_mma`:
  the MUFU steps after it in issue order, up to the next MMA or `scf.if`, that do not
  depend on it within the trip; docs/perf.md, 2026-11-27).

`model_intervals(kernel, plan)` simulates them (`TIMELINE_ITERATIONS` iterations) and
returns each consumer main loop's steady-state interval: the model's price of a schedule
(the `auto` planner's, the corpus benchmark's prediction). Both warp groups start in
phase, but for a loop whose trip count changes from tile to tile (`trips_vary`) with
`target.phase_leads`: then the price is the mean over those starts (the first warp group
entering that many in-phase intervals late).

Not modelled: ops outside the main loops (prologue, epilogue, the persistent tile loop),
scalar index math, the ping-pong turns of `pingpong` (the consumer warp groups are drawn
splitting the rows of one tile), L2 misses and TMA bandwidth with several copies in
flight (cost.py's TMA figure is one L2-hit copy at a time).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from xdsl.dialects import scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from tawac.analysis.grid import Problem, problem_at
from tawac.analysis.loops import main_loops, scheduled_ops
from tawac.analysis.program_ids import depends_on_program_id
from tawac.dialects import aref, tile
from tawac.dialects.schedule import LoopPlan, Schedule
from tawac.schedule import loop_plan
from tawac.schedule.cost import NoCostModel, op_cost
from tawac.schedule.simulate import Dep, Lane, Step, steady_ii
from tawac.support.diagnostics import CompileError
from tawac.target import HOPPER, Target

#: Iterations the timeline model simulates of a main loop to find its steady state
#: (`tawac explain --timeline` draws 3 of them).
TIMELINE_ITERATIONS = 24

_SHORT = {"scf.if": "if", "tile.reduce": "reduce"}
_PART_NAMES = {"tile.reduce": ("fold", "shfl")}


def _value_name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%?"


def aref_name(v: SSAValue, index: int | None = None) -> str:
    """An aref as labels name it: its identity (`a_b`), else its SSA name."""
    if isinstance(v.owner, aref.CreateOp) and v.owner.ident is not None:
        return v.owner.ident
    if v.name_hint:
        return f"%{v.name_hint}"
    return f"%aref{index}" if index is not None else "%aref"


def step_label(op: Operation, arefs: dict[SSAValue, int] | None = None) -> str:
    """A short bar label: "%s dot", "%p exp2", "get k", "put a_b"."""
    arefs = arefs or {}
    if isinstance(op, (aref.GetOp, aref.PutOp, aref.ConsumedOp)):
        r = op.operands[0]
        verb = {aref.GetOp: "get", aref.PutOp: "put", aref.ConsumedOp: "consumed"}[type(op)]
        return f"{verb} {aref_name(r, arefs.get(r))}"
    short = _SHORT.get(op.name, op.name.split(".")[-1])
    named = [r for r in op.results if r.name_hint]
    return f"{_value_name(named[0])} {short}" if named else short


def _used_values(op: Operation) -> list[SSAValue]:
    """The values `op` reads, also inside its regions (defined outside `op`)."""
    out = list(op.operands)
    for inner in op.walk():
        if inner is op:
            continue
        for v in inner.operands:
            owner = v.owner
            parent = owner.parent_op() if isinstance(owner, Block) else owner
            while parent is not None and parent is not op:
                parent = parent.parent_op()
            if parent is None:
                out.append(v)
    return out


class _Body:
    """One main loop's body as steps: the ops in issue order, split into parts."""

    def __init__(
        self,
        loop: scf.ForOp,
        lp: LoopPlan,
        warp_groups: int,
        arefs,
        target: Target = HOPPER,
        problem: Problem | None = None,
    ):
        self.loop = loop
        ops = scheduled_ops(loop.body.block)
        if len(ops) != len({o.index for o in lp.ops}) or any(
            o.index >= len(ops) or ops[o.index].name != o.op for o in lp.ops
        ):
            raise CompileError(
                f"the schedule of {lp.role} loop {lp.loop} does not fit its body "
                f"({len(ops)} scheduled ops)",
                loop,
            )
        self.ops = [ops[o.index] for o in lp.ops]  # issue order
        self.stages = [o.stage for o in lp.ops]
        self.steps: list[dict] = []  # label, cost, stage, op position, deps
        self.first: dict[Operation, int] = {}
        self.last: dict[Operation, int] = {}
        for pos, op in enumerate(self.ops):
            try:
                cost = op_cost(op, warp_groups, target, problem)
            except NoCostModel:
                raise CompileError(
                    f"plan: '{op.name}' on tiles is not supported (no lowering, no cost model)",
                    op,
                ) from None
            label = step_label(op, arefs)
            parts = cost.parts if cost.parts and op.name != "scf.if" else (cost,)
            names = _PART_NAMES.get(op.name, tuple(p.unit for p in parts))
            self.first[op] = len(self.steps)
            for k, part in enumerate(parts):
                text = label if len(parts) == 1 else f"{label}·{names[k]}"
                deps = [Dep("", len(self.steps) - 1)] if k else []
                self.steps.append(
                    {
                        "label": text,
                        "cost": part,
                        "stage": self.stages[pos],
                        "deps": deps,
                        "source": lp.ops[pos].index,
                    }
                )
            self.last[op] = len(self.steps) - 1
        self.defs: dict[SSAValue, Operation] = {r: o for o in self.ops for r in o.results}

    def producer_of(self, v: SSAValue) -> tuple[Operation, int] | None:
        """The scheduled op of this body defining `v`, with the iteration distance (0, or
        1 through the loop's iteration arguments)."""
        if v in self.defs:
            return self.defs[v], 0
        block = self.loop.body.block
        if isinstance(v, BlockArgument) and v.block is block and v.index > 0:
            yielded = block.last_op.operands[v.index - 1]
            if yielded in self.defs:
                return self.defs[yielded], 1
        return None

    def add_data_deps(self) -> None:
        for op in self.ops:
            seen: set[tuple[int, int]] = set()
            for v in _used_values(op):
                found = self.producer_of(v)
                if found is None:
                    continue
                src, distance = found
                if distance and isinstance(op, tile.DotOp) and isinstance(src, tile.DotOp):
                    continue  # accumulating into the last MMA's result: chained in the unit
                key = (self.last[src], distance)
                if key in seen:
                    continue
                seen.add(key)
                label = (
                    f"{_value_name(v)} ready" if distance == 0 else f"{_value_name(v)} (carried)"
                )
                self.steps[self.first[op]]["deps"].append(Dep("", key[0], distance, label))

    def trip_dependents(self, i: int) -> set[int]:
        """The steps that need step `i`'s result in the same trip of the loop (a dep of
        distance d on a step of stage s' from a step of stage s is in the same trip when
        d = s' - s), transitively; with `i`."""
        found = {i}
        grew = True
        while grew:
            grew = False
            for j, st in enumerate(self.steps):
                if j in found:
                    continue
                for d in st["deps"]:
                    if d.lane or d.step not in found:
                        continue
                    if d.distance == self.steps[d.step]["stage"] - st["stage"]:
                        found.add(j)
                        grew = True
                        break
        return found

    def hold_mma(self, share: float) -> None:
        """Each MMA's tensor occupancy grows by `share` of the issue time of the MUFU
        steps after it, up to the next MMA or `scf.if`, that do not need it within the
        trip (module docstring: ptxas interleaves them into its wgmmas)."""
        if share <= 0:
            return
        op_of = {k: op for op in self.ops for k in range(self.first[op], self.last[op] + 1)}
        for i, st in enumerate(self.steps):
            if st["cost"].unit != "tensor":
                continue
            needs = self.trip_dependents(i)
            held = 0.0
            for j in range(i + 1, len(self.steps)):
                unit = self.steps[j]["cost"].unit
                if unit == "tensor" or isinstance(op_of[j], scf.IfOp):
                    break
                if unit == "mufu" and j not in needs:
                    held += self.steps[j]["cost"].issue
            if held:
                cost = st["cost"]
                st["cost"] = dataclasses.replace(cost, occupancy=cost.occupancy + share * held)

    def positions(self, kind: type, r: SSAValue) -> list[int]:
        return [i for i, o in enumerate(self.ops) if isinstance(o, kind) and o.operands[0] == r]


def role_loops(kernel: tile.KernelOp, role: str) -> list[scf.ForOp]:
    """The main loops of the kernel's first partition of `role` (none without one)."""
    for part in kernel.body.block.ops:
        if isinstance(part, aref.PartitionOp) and part.role.data == role:
            return main_loops(part)
    return []


def _streaming_loop(kernel: tile.KernelOp, role: str, k: int = 0) -> scf.ForOp | None:
    loops = role_loops(kernel, role)
    return loops[k] if k < len(loops) else None


def loop_lanes(
    kernel: tile.KernelOp,
    plan: Schedule,
    k: int = 0,
    target: Target = HOPPER,
    sizes: Mapping[str, int] | None = None,
) -> list[Lane]:
    """The lanes of the producer's and consumer's main loop `k` (module docstring), costed
    by `target`'s model; at the dimension sizes `sizes` where given (a grid of one program
    along an axis makes the tiles only that axis would share streamed from DRAM:
    `tawac.analysis.grid.lone_axes`)."""
    problem = problem_at(kernel, sizes)
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    index = {c.result: k for k, c in enumerate(creates)}
    decided = {c.result: plan.aref(c.ident) for c in creates}
    consumer_role = plan.role("consumer")
    if consumer_role is None:
        raise CompileError("the schedule has no consumer role: no loop to draw", kernel)
    wgs = consumer_role.warp_groups
    bodies: dict[str, _Body] = {}
    for role, groups in (("producer", 1), ("consumer", wgs)):
        loop = _streaming_loop(kernel, role, k)
        if loop is not None:
            lp = loop_plan(plan, role, k, loop)
            bodies[role] = _Body(loop, lp, groups, index, target, problem)
    if "consumer" not in bodies:
        raise CompileError("the consumer has no main loop to draw", kernel)
    for body in bodies.values():
        body.add_data_deps()
    consumer = bodies["consumer"]
    consumer.hold_mma(target.mma_mufu_hold)
    producer = bodies.get("producer")
    names = [f"consumer wg{i}" for i in range(wgs)]

    # The release of a slot waits for the ops reading what `aref.get` returned.
    for op in consumer.ops:
        if not isinstance(op, aref.ConsumedOp):
            continue
        r = op.operands[0]
        a = decided.get(r)
        lag = a.lag if a is not None else 0
        readers: list[Operation] = []
        for g in consumer.positions(aref.GetOp, r):
            for res in consumer.ops[g].results:
                readers += [u.operation for u in res.uses]
        for reader in dict.fromkeys(readers):
            top = consumer.loop.body.block.find_ancestor_op_in_block(reader)
            if top is not None and top in consumer.last:
                consumer.steps[consumer.first[op]]["deps"].append(
                    Dep("", consumer.last[top], lag, f"{step_label(top)} done")
                )

    # Full barriers: get waits for the put of the same iteration.
    if producer is not None:
        for op in consumer.ops:
            if isinstance(op, aref.GetOp):
                r = op.operands[0]
                for p in producer.positions(aref.PutOp, r):
                    consumer.steps[consumer.first[op]]["deps"].append(
                        Dep(
                            "producer",
                            producer.last[producer.ops[p]],
                            0,
                            f"full {aref_name(r, index.get(r))}",
                        )
                    )
        # Empty barriers: put of iteration j waits for every consumer lane's release of
        # iteration j - depth + lag.
        for op in producer.ops:
            if not isinstance(op, aref.PutOp):
                continue
            r = op.operands[0]
            a = decided.get(r)
            if a is None:
                continue
            for c in consumer.positions(aref.ConsumedOp, r):
                for name in names:
                    producer.steps[producer.first[op]]["deps"].append(
                        Dep(
                            name,
                            consumer.last[consumer.ops[c]],
                            a.depth - a.lag,
                            f"empty {aref_name(r, index.get(r))}",
                            index[r],
                        )
                    )

    def lane(name: str, role: str, body: _Body) -> Lane:
        steps = tuple(
            Step(
                label=s["label"],
                unit=s["cost"].unit,
                issue=s["cost"].issue,
                occupancy=s["cost"].occupancy,
                latency=s["cost"].latency,
                deps=tuple(s["deps"]),
                stage=s["stage"],
                source=s["source"],
            )
            for s in body.steps
        )
        return Lane(name, role, steps)

    lanes = [lane("producer", "producer", producer)] if producer is not None else []
    lanes += [lane(name, "consumer", consumer) for name in names]
    return lanes


def model_intervals(
    kernel: tile.KernelOp,
    plan: Schedule,
    iterations: int = TIMELINE_ITERATIONS,
    target: Target = HOPPER,
    sizes: Mapping[str, int] | None = None,
) -> list[float]:
    """The timeline model's steady-state interval (cycles per iteration, `simulate`'s
    `ii`) of each of the consumer's main loops under `plan`, in order, up to the first
    one the model cannot build (`loop_lanes`'s error: a loop schedule that does not fit
    its body), costed by `target`'s model; `tawac explain --timeline` draws the first."""
    out = []
    for k in range(len(role_loops(kernel, "consumer"))):
        try:
            lanes = loop_lanes(kernel, plan, k, target, sizes)
        except CompileError:
            break
        loop = _streaming_loop(kernel, "consumer", k)
        leads = target.phase_leads if loop is not None and trips_vary(loop) else (0.0,)
        out.append(_phase_priced(lanes, iterations, leads))
    return out


def trips_vary(loop: scf.ForOp) -> bool:
    """Whether the loop's trip count may change from one tile to the next: a bound or
    the step depends on a program id (a causal key loop ends at the diagonal) or on
    data (`tawac.analysis.program_ids.depends_on_program_id`)."""
    return any(
        depends_on_program_id(v, axis) for v in (loop.lb, loop.ub, loop.step) for axis in range(3)
    )


def _phase_priced(lanes: list[Lane], iterations: int, leads: tuple[float, ...]) -> float:
    """The mean steady-state interval over the starts `leads` gives the first consumer
    warp group (`Target.phase_leads`); the in-phase one with one consumer warp group."""
    return _priced(tuple(lanes), iterations, tuple(leads))


@functools.lru_cache(maxsize=1024)
def _priced(lanes: tuple[Lane, ...], iterations: int, leads: tuple[float, ...]) -> float:
    """`_phase_priced`, kept by its inputs (a pure function of them: the auto planner
    prices the heuristic's schedule, a compile prices it again in each planner, a test
    session compiles one kernel many times)."""
    in_phase = steady_ii(lanes, iterations)
    consumers = [ln.name for ln in lanes if ln.role == "consumer"]
    if len(consumers) < 2 or not leads:
        return in_phase
    iis = [
        in_phase if lead == 0 else steady_ii(lanes, iterations, {consumers[0]: lead * in_phase})
        for lead in leads
    ]
    return sum(iis) / len(iis)


def schedule_cost(kernel: tile.KernelOp, plan: Schedule) -> float | None:
    """The model's price of `plan`: the sum over the consumer's main loops of their
    steady-state intervals (cycles); None where the kernel has no consumer main loop or
    the model cannot build one of them (the `auto` planner's `cost`)."""
    intervals = model_intervals(kernel, plan)
    if not intervals or len(intervals) < len(role_loops(kernel, "consumer")):
        return None
    return sum(intervals)
