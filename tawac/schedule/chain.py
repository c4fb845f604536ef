"""Chained loops: two consecutive consumer main loops whose two-stage schedules run as one
pipeline across their boundary (a decision of the schedule, `LoopPlan.chained`, taken by
`complete` where the knob `chain_loops` allows it, checked by `check`, applied by
`coarse-pipeline`; docs/design/passes.md, "Chained loops").

Triton's tutorial causal attention runs the key blocks left of the diagonal, then the
diagonal block, as two loops, the second carrying on the first's row maxima, sums and
accumulator. Each expanded alone, the first drains (its last P V awaited with nothing
beside it) and the second fills (its first S and softmax with nothing in flight) at every
tile. Chained, the boundary is one steady body: the second loop's first stage on its
first iteration beside the first loop's second stage on its last.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation

from tawac.analysis.loops import scheduled_ops
from tawac.analysis.scalars import SCALAR_OPS
from tawac.dialects import tile
from tawac.dialects.schedule import LoopPlan


def _stages(loop: scf.ForOp, lp: LoopPlan) -> dict[Operation, int]:
    sched = scheduled_ops(loop.body.block)
    return {sched[o.index]: o.stage for o in lp.ops if o.index < len(sched)}


def _has_dot(stages: dict[Operation, int], stage: int) -> bool:
    return any(isinstance(op, tile.DotOp) and s == stage for op, s in stages.items())


def chain_problem(first: scf.ForOp, lp1: LoopPlan, second: scf.ForOp, lp2: LoopPlan) -> str | None:
    """Why `first; second` cannot run as one pipeline, or None when they can: both have
    two-stage schedules (not in body order), follow each other in one block with only
    index math between them that does not read the first, the first's results are read
    only as the second's initial values, each has an MMA in the stage the boundary
    issues first (the second's stage 0, the first's stage 1), and the second's stage 0
    reads of the first's results only those its stage 0 computes."""
    if lp1.stages != 2 or lp2.stages != 2 or lp1.in_body_order or lp2.in_body_order:
        return "the loops do not both have two-stage schedules"
    if first.parent_block() is not second.parent_block():
        return "the loops are not in one block"
    op = first.next_op
    while op is not None and op is not second:
        if not isinstance(op, SCALAR_OPS) or any(v in first.results for v in op.operands):
            return f"'{op.name}' is between the loops"
        op = op.next_op
    if op is None:
        return "the second loop does not follow the first"
    for r in first.results:
        if any(u.operation is not second or u.index < 3 for u in r.uses):
            return "the first loop's results are read elsewhere than as the second's inits"
    s1, s2 = _stages(first, lp1), _stages(second, lp2)
    if not _has_dot(s1, 1) or not _has_dot(s2, 0):
        return "no MMA in the first loop's second stage or in the second loop's first"
    yields = first.body.block.last_op
    assert isinstance(yields, scf.YieldOp)
    late = set()
    for r, y in zip(first.results, yields.operands, strict=True):
        producer = y.owner
        if not isinstance(producer, Operation) or s1.get(producer, 1) != 0:
            late.add(r)
    body = second.body.block
    for init, arg in zip(second.iter_args, body.args[1:], strict=True):
        if init not in late:
            continue
        for u in arg.uses:
            top = body.find_ancestor_op_in_block(u.operation)
            if top is not None and s2.get(top) == 0:
                return (
                    f"'{top.name}' of the second loop's first stage reads a result of the "
                    "first loop's second stage"
                )
    return None
