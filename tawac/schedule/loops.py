"""The loop structure a schedule refers to, defined once for the planner and the passes
that apply its loop schedules.

- A partition's *main loops*: its `scf.for`s whose body moves data through arefs (an
  `aref.get` or `aref.put` directly in the body) and that hold no such loop themselves,
  in walk order. Before `persistent` they are the partition's top-level streaming loops;
  after it, the same loops inside the tile loop.
- A loop body's *scheduled ops*: its top-level ops except scalar index math (recomputed
  wherever a stage needs it), MMA waits (placed by the passes from the MMA's stage) and
  the yield, numbered in body order. `pipeline` and `persistent` add only such unscheduled
  ops, so the numbers the planner gives stay valid until `coarse-pipeline` applies them.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from tawac.dialects import aref, hopper
from tawac.passes.warp_specialize import SCALAR_OPS

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


def is_scheduled(op: Operation) -> bool:
    return not isinstance(op, (*SCALAR_OPS, hopper.WgmmaWaitOp, scf.YieldOp))


def scheduled_ops(body: Block) -> list[Operation]:
    """The body's scheduled ops in body order (their index is their number)."""
    return [o for o in body.ops if is_scheduled(o)]
