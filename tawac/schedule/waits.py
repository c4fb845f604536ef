"""Where each MMA of a main loop is awaited, and with how many wgmma groups left in flight:
the planner's rule for the `wait` entries of a loop schedule (`LoopPlan.waits`).

`pipeline` (a loop run in body order) and `coarse-pipeline` (a loop it expands) place the
waits as the schedule lists them and decide nothing. The MMAs awaited are those whose
slots the loop releases (a dot reading an aref's slot, released in the same body). The
rule:

- A loop run in body order: each MMA is awaited right after it. With `pending 0`, unless
  its slots are released with a lag L (GEMM's K loop at `mma-depth` L, a pure
  accumulation chain): `pending L`, which keeps the last L MMAs in flight across
  iterations and guarantees the one of L iterations ago (`pipeline` releases its slot).
- A loop whose schedule reorders it or pipelines it over stages: an MMA (stage s) is
  awaited right before the first op after it in the issue order that reads its result
  in the same body (an op of stage s reading the result, or of stage s - 1 reading it
  through the iteration argument it is yielded into), or that releases (stage s) a slot
  the MMA reads, else at the end of the body (before its result is carried or yielded);
  `pending` counts the awaited MMAs issued between the MMA and its wait, which may stay
  in flight (the softmax of S_j runs while P_{j-1} V_{j-1} is on the tensor core).
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from tawac.analysis.loops import scheduled_ops
from tawac.analysis.mma import releasing_dots
from tawac.dialects import aref, tile
from tawac.dialects.schedule import LoopPlan, WaitPlan


def awaited_dots(body: Block, lags: Mapping[SSAValue, int]) -> dict[tile.DotOp, int]:
    """The body's MMAs that need a wait (those reading a slot the body releases), each
    with the largest release lag of the arefs it reads (`lags`, per aref value)."""
    out: dict[tile.DotOp, int] = {}
    for op in body.ops:
        if not isinstance(op, aref.ConsumedOp):
            continue
        for dot in releasing_dots(op):
            out[dot] = max(out.get(dot, 0), lags.get(op.aref, 0))
    return out


def plan_waits(loop: scf.ForOp, lp: LoopPlan, lags: Mapping[SSAValue, int]) -> tuple[WaitPlan, ...]:
    """The waits of the MMAs of `loop` under the schedule `lp` (the module docstring);
    `lags`: each aref value's release lag."""
    body = loop.body.block
    sched = scheduled_ops(body)
    order = [sched[o.index] for o in lp.ops]
    awaited = awaited_dots(body, lags)
    number = {op: n for n, op in enumerate(sched)}
    if lp.in_body_order:
        return tuple(
            WaitPlan(number[op], awaited[op], p + 1)
            for p, op in enumerate(order)
            if isinstance(op, tile.DotOp) and op in awaited
        )
    stage = {sched[o.index]: o.stage for o in lp.ops}
    found: list[tuple[int, int, WaitPlan]] = []
    for p, op in enumerate(order):
        if not isinstance(op, tile.DotOp) or op not in awaited:
            continue
        at = next(
            (q for q in range(p + 1, len(order)) if due(order[q], op, stage, body)),
            len(order),
        )
        pending = sum(1 for x in order[p + 1 : at] if x in awaited)
        found.append((at, p, WaitPlan(number[op], pending, at)))
    return tuple(w for _, _, w in sorted(found, key=lambda t: (t[0], t[1])))


def _reads(op: Operation) -> list[SSAValue]:
    """The values `op` and the ops nested in it read from outside `op`."""
    out: list[SSAValue] = []
    for inner in op.walk():
        for v in inner.operands:
            if not op.is_ancestor(v.owner) and v not in out:
                out.append(v)
    return out


def due(op: Operation, dot: tile.DotOp, stage: dict[Operation, int], body: Block) -> bool:
    """`op` needs `dot`'s wait before it in the same body: it reads the dot's result (of
    this body's iteration of the dot), or releases a slot the dot reads, at its stage."""
    s = stage[dot]
    if isinstance(op, aref.ConsumedOp):
        reads_slot = any(
            isinstance(v.owner, aref.GetOp) and v.owner.aref == op.aref for v in dot.operands
        )
        if reads_slot and stage[op] == s:
            return True
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    for v in _reads(op):
        if v is dot.result and stage[op] == s:
            return True
        if v in body.args[1:]:
            j = body.args.index(v) - 1
            if yield_op.operands[j] is dot.result and stage[op] == s - 1:
                return True
    return False
