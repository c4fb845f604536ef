"""Register pressure of a consumer main loop under its schedule: the most 32-bit
registers per thread that the loop's 2-d tile values hold at once in the steady state.

The solver's register constraint (`tawac.schedule.solver`) is linear: each tile counts
once per body it is carried into, plus the largest tile never carried. It does not see
two tiles of one body live together (a softmax's P in f32 beside its bf16 copy while the
next S is in flight), and under the calibrated model it chose a two-stage d128 attention
loop that ptxas spilled (44 bytes, docs/perf.md). This analysis walks the schedule's issue
order instead and counts, after each op, every tile live across it:

- a value lives from its op's issue to its last reader's, in the global order
  `stage x N + position` (N scheduled ops per body); a reader of a later iteration (through
  an iteration argument) adds `distance x N`. A value live longer than a body has several
  copies in flight, each counted;
- an MMA's register operand (the A fragment of `wgmma ... a-from-registers`, PTX ISA
  9.7.15.5.1) stays live until the MMA's wait (`LoopPlan.waits`): the tensor core reads it
  while the MMA is in flight;
- an MMA's result occupies its registers from the issue (the accumulator it updates in
  place ends there: the same registers);
- tiles in shared memory (`aref.get` slots), row vectors broadcast into the accumulator
  layout and uniform tiles (splats, constants: ptxas keeps one scalar) hold no tile
  registers; other 2-d tiles defined outside the loop and read in it are live throughout.

Row vectors, addresses and counters are not counted: the caller adds a working set.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from tawac.analysis.loops import in_body, main_loops, scheduled_ops
from tawac.dialects import aref, tile
from tawac.dialects.schedule import LoopPlan, Schedule
from tawac.target import HOPPER


def tile_registers(t: TensorType, warp_groups: int) -> int:
    """32-bit registers per thread of a consumer warp group holding its share of the 2-d
    tile `t` (the wgmma accumulator layout, `warp_groups` warp groups splitting its rows)."""
    rows, cols = t.get_shape()
    elements = rows * cols // warp_groups // HOPPER.warp_group_size
    return max(1, elements * t.element_type.bitwidth // 32)


def body_readers(r: SSAValue, body: Block, number: dict[Operation, int]) -> list[tuple[int, int]]:
    """(number, distance) of every scheduled op of `body` reading `r` (also inside its
    regions): distance 0 in the same iteration, 1 through the yield and an iteration
    argument in the next; `number` maps the body's scheduled ops to their numbers."""
    out: list[tuple[int, int]] = []
    yield_op = body.last_op

    def readers(v: SSAValue, distance: int) -> None:
        for use in v.uses:
            top = body.find_ancestor_op_in_block(use.operation)
            if top is yield_op:
                if distance == 0:
                    readers(body.args[1 + use.index], 1)
                continue
            if top in number and (number[top], distance) not in out:
                out.append((number[top], distance))

    readers(r, 0)
    return out


def _in_registers(v: SSAValue) -> bool:
    t = v.type
    if not isinstance(t, TensorType) or len(t.get_shape()) != 2:
        return False
    return not isinstance(v.owner, aref.GetOp | tile.BroadcastOp | tile.SplatOp | arith.ConstantOp)


@dataclass(frozen=True)
class Pressure:
    """The peak (registers per thread), the issue position after which it occurs, and the
    values live there (their op's number, registers), largest first."""

    peak: int
    at: int
    live: tuple[tuple[str, int], ...]


def loop_pressure(loop: scf.ForOp, lp: LoopPlan | None, warp_groups: int) -> Pressure:
    """The register pressure of `loop` (a consumer main loop) under its schedule `lp`
    (None: the body order in one stage, each MMA awaited right after it)."""
    body = loop.body.block
    ops = scheduled_ops(body)
    n = len(ops)
    number = {op: k for k, op in enumerate(ops)}
    if lp is None:
        pos = {k: k for k in range(n)}
        stage = {k: 0 for k in range(n)}
        waits = {k: k + 1 for k, op in enumerate(ops) if isinstance(op, tile.DotOp)}
    else:
        pos = {o.index: p for p, o in enumerate(lp.ops)}
        stage = {o.index: o.stage for o in lp.ops}
        waits = {w.dot: w.at for w in lp.waits}

    def at(k: int, distance: int = 0) -> int:
        return (stage[k] + distance) * n + pos[k]

    spans: dict[SSAValue, tuple[int, int]] = {}  # value -> (start, end)
    held: list[tuple[SSAValue, int, int]] = []  # MMA register operands until their wait
    outside: dict[SSAValue, int] = {}
    for k, op in enumerate(ops):
        for v in op.operands:
            if _in_registers(v) and not in_body(v, body):
                outside[v] = tile_registers(v.type, warp_groups)
        for r in op.results:
            if _in_registers(r):
                ends = [at(j, d) for j, d in body_readers(r, body, number)]
                spans[r] = (at(k), max([at(k), *ends]))
        if isinstance(op, tile.DotOp) and k in waits:
            done = stage[k] * n + max(waits[k], pos[k] + 1)
            for v in (op.lhs, op.rhs):
                if v in spans:
                    held.append((v, spans[v][0], done))
    base = sum(outside.values())
    best = Pressure(-1, 0, ())
    for x in range(n):
        live = {v: c for v, (start, end) in spans.items() if (c := _copies(start, end, x, n))}
        for v, start, end in held:
            live[v] = max(live.get(v, 0), _copies(start, end, x, n))
        sized = [(_label(v), c * tile_registers(v.type, warp_groups)) for v, c in live.items() if c]
        total = base + sum(r for _, r in sized)
        if total > best.peak:
            best = Pressure(total, x, tuple(sorted(sized, key=lambda t: -t[1])))
    return best


def consumer_pressure(kernel: tile.KernelOp, plan: Schedule) -> list[tuple[Pressure, int]]:
    """Per consumer main loop of `kernel` (as `plan` left it) under the completed schedule
    `plan`, its register pressure and the consumer's budget (registers per thread)."""
    consumer = plan.role("consumer")
    if consumer is None:
        return []
    out = []
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        for k, loop in enumerate(main_loops(part)):
            lp = plan.loop("consumer", k)
            out.append((loop_pressure(loop, lp, consumer.warp_groups), consumer.regs))
        break
    return out


def _copies(start: int, end: int, x: int, n: int) -> int:
    """How many k make `start <= x + k n < end`: copies of a value live after position
    `x` of the steady-state body."""
    if end <= start:
        return 0
    first = -((x - start) // n)  # the least k with x + k n >= start
    last = (end - 1 - x) // n  # the largest k with x + k n < end
    return max(0, last - first + 1)


def _label(v: SSAValue) -> str:
    name = f"%{v.name_hint}" if v.name_hint else "a tile"
    return f"{name} = {v.owner.name}" if isinstance(v.owner, Operation) else name


__all__ = ["Pressure", "body_readers", "consumer_pressure", "loop_pressure", "tile_registers"]
