"""The loop structure a schedule refers to, defined once for the planner, the passes
that apply its loop schedules, the cost model and `tawac explain`.

- A partition's *main loops*: its `scf.for`s whose body moves data through arefs (an
  `aref.get` or `aref.put` directly in the body) and that hold no such loop themselves,
  in walk order. Before `persistent` they are the partition's top-level streaming loops;
  after it, the same loops inside the tile loop.
- A loop body's *scheduled ops*: its top-level ops except scalar index math (recomputed
  wherever a stage needs it), MMA waits (placed by the passes from the MMA's stage) and
  the yield, numbered in body order. `pipeline` and `persistent` add only such unscheduled
  ops, so the numbers the planner gives stay valid until `coarse-pipeline` applies them.
- What a two-stage split carries between its stages (`carried_values`): the planner
  asks it whether a split is realizable, `coarse-pipeline` what to carry.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, TensorType
from xdsl.ir import Block, Operation, SSAValue

from tawac.analysis.scalars import SCALAR_OPS
from tawac.dialects import aref, hopper, tile

_TRANSFERS = (aref.GetOp, aref.PutOp)


def _streams(loop: scf.ForOp) -> bool:
    return any(isinstance(o, _TRANSFERS) for o in loop.body.block.ops)


def main_loops(part: aref.PartitionOp) -> list[scf.ForOp]:
    """The partition's main loops, in walk order."""
    loops = [o for o in part.walk() if isinstance(o, scf.ForOp) and _streams(o)]
    return [
        lp
        for lp in loops
        if not any(o is not lp and isinstance(o, scf.ForOp) and _streams(o) for o in lp.walk())
    ]


def in_loop(op: Operation) -> bool:
    """`op` runs in a loop of its partition (an `scf.for` between it and the partition)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, aref.PartitionOp):
        if isinstance(parent, scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


def is_scheduled(op: Operation) -> bool:
    return not isinstance(op, (*SCALAR_OPS, hopper.WgmmaWaitOp, scf.YieldOp))


def scheduled_ops(body: Block) -> list[Operation]:
    """The body's scheduled ops in body order (their index is their number)."""
    return [o for o in body.ops if is_scheduled(o)]


def in_body(v: SSAValue, body: Block) -> bool:
    """`v` is defined in `body` (by one of its ops, nested ops included, or as its
    argument)."""
    owner = v.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op.parent_block() is body:
            return True
        op = op.parent_op()
    return isinstance(owner, Block) and owner is body


def index_slice(v: SSAValue, body: Block) -> list[Operation] | None:
    """The body's scalar ops computing `v` from the induction variable and values
    defined outside the loop, or None if `v` needs anything else."""
    needed: set[Operation] = set()
    work = [v]
    while work:
        x = work.pop()
        if x is body.args[0] or not in_body(x, body):
            continue
        owner = x.owner
        if not isinstance(owner, SCALAR_OPS) or owner.parent_block() is not body:
            return None
        if owner not in needed:
            needed.add(owner)
            work.extend(owner.operands)
    return [o for o in body.ops if o in needed]


def carried_values(
    body: Block, stage_b: set[Operation], acc_index: int
) -> tuple[list[Operation], list[SSAValue]] | None:
    """What stage B takes from stage A: the scalar ops it recomputes from the previous
    induction value, and the tiles carried to the next iteration; None when the split
    cannot be realized (stage A reads a stage B value, another yield operand comes from
    stage B, or stage B reads an MMA result in flight or a slot stage A also reads)."""
    ops = list(body.ops)
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    arg = body.args[1 + acc_index]
    stage_a = [o for o in ops if o not in stage_b and o is not yield_op]
    for op in stage_a:
        for inner in op.walk():
            if any(isinstance(v.owner, Operation) and v.owner in stage_b for v in inner.operands):
                return None
    for j, v in enumerate(yield_op.operands):
        if j != acc_index and isinstance(v.owner, Operation) and v.owner in stage_b:
            return None
    index_ops: list[Operation] = []
    carried: list[SSAValue] = []
    for op in [o for o in ops if o in stage_b]:
        for v in op.operands:
            if (
                not in_body(v, body)
                or v is arg
                or (isinstance(v.owner, Operation) and v.owner in stage_b)
            ):
                continue
            if isinstance(v.type, IndexType):
                sl = index_slice(v, body)
                if sl is None:
                    return None
                index_ops.extend(o for o in sl if o not in index_ops)
                continue
            if not isinstance(v.type, TensorType) or isinstance(
                v.owner, tile.DotOp | hopper.WgmmaWaitOp | aref.GetOp
            ):
                # an MMA result in flight cannot be copied; a slot stage A also reads
                # would be released by stage A while stage B still reads it
                return None
            if v not in carried:
                carried.append(v)
    index_ops.sort(key=ops.index)
    return index_ops, carried


def trip_count(lb: SSAValue, ub: SSAValue, step: SSAValue) -> list[Operation]:
    """Ops computing max(0, ceil((ub - lb) / step)), the iterations of a loop over
    [lb, ub) by step; the last op's result is the count."""
    zero = arith.ConstantOp.from_int_and_width(0, IndexType())
    span = arith.SubiOp(ub, lb)
    trips = arith.CeilDivSIOp(span.result, step)
    clamped = arith.MaxSIOp(trips.result, zero.result)
    return [zero, span, trips, clamped]
