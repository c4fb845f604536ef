"""`pipeline`: multi-buffering and fine-grained MMA pipelining (Tawa sections 4.3 and
4.4), applying each aref's depth D and release lag P from `#tawac.schedule` (decided by
the planner: rings of `stages` slots for arefs written in a loop, one slot, or two for a
per-tile operand of a persistent kernel, for the others; P = mma-depth where allowed).

- An aref of depth D is a ring of D slots, so the producer runs up to D transfers ahead.
- The MMAs of a main loop the schedule runs in body order are awaited where its loop
  schedule lists their waits (`wait 1 pending P`; `coarse-pipeline` places the waits of
  the loops it rewrites); an MMA outside the main loops is awaited right after it.
- With P > 0 (planned only for a consumer loop whose body reads one aref slot per
  iteration and feeds it to one `tile.dot` whose result is only carried to the next
  iteration), the MMA is asynchronous: after issuing the MMA of iteration i the consumer
  waits until at most P MMA groups are in flight (`hopper.wgmma_wait pending P`), which
  guarantees that the MMA of iteration i-P has finished reading its operands, and only
  then releases the slot of iteration i-P (`aref.consumed %r[%it - P]`, skipped while
  `%it < P`).  Releasing a slot whose MMA may still be reading it is the classic race;
  this ordering rules it out.  After the loop, `hopper.wgmma_wait pending 0` makes the
  accumulator final.

Deadlock freedom needs P < D: the producer of iteration i waits for the release of
iteration i-D, which the consumer gives at iteration i-D+P < i.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.loops import main_loops, scheduled_ops
from tawac.analysis.mma import releasing_dots
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import Schedule


def set_depth(create: aref.CreateOp, depth: int) -> aref.CreateOp:
    """Replace `create` by an aref of the same payload and identity with `depth` slots."""
    t = create.aref_type
    new = aref.CreateOp(aref.ArefType(list(t.payload.data), depth), create.ident)
    new.location = create.location
    new.result.name_hint = create.result.name_hint
    Rewriter.replace_op(create, new)
    return new


def _defer_release(consumed: aref.ConsumedOp, lag: int) -> None:
    """Release the slot of iteration `it - lag` instead of `it` (from iteration `lag` on),
    and make the accumulator leaving the loop final (`wgmma_wait pending 0` after it)."""
    block = consumed.parent_block()
    assert block is not None
    loop = block.parent_op()
    assert isinstance(loop, scf.ForOp)
    dot = releasing_dots(consumed)[0]
    (use,) = dot.result.uses
    wait = use.operation
    assert isinstance(wait, hopper.WgmmaWaitOp)
    cp = arith.ConstantOp.from_int_and_width(lag, IndexType())
    ok = arith.CmpiOp(consumed.index, cp.result, "uge")
    prev = arith.SubiOp(consumed.index, cp.result)
    release = aref.ConsumedOp(consumed.aref, prev.result, deferred=True)
    guarded = scf.IfOp(ok.result, [], Region(Block([prev, release, scf.YieldOp()])))
    Rewriter.insert_op([cp, ok, guarded], InsertPoint.after(consumed))
    Rewriter.erase_op(consumed)

    # The accumulator leaving the loop is final only after all groups completed.
    yield_op = block.last_op
    assert isinstance(yield_op, scf.YieldOp)
    idx = [i for i, v in enumerate(yield_op.operands) if v is wait.result][0]
    res = loop.results[idx]
    final = hopper.WgmmaWaitOp(res, 0)
    final.result.name_hint = res.name_hint
    res.replace_all_uses_with(final.result)
    final.operands = [res]
    Rewriter.insert_op(final, InsertPoint.after(loop))


def _wait(dot: tile.DotOp, pending: int, after: Operation) -> None:
    """Await `dot` right after `after`, leaving `pending` wgmma groups in flight; the
    dot's users read the wait's result."""
    wait = hopper.WgmmaWaitOp(dot.result, pending)
    if pending:  # in body order: an MMA kept in flight across iterations (a release lag)
        wait.result.name_hint = dot.result.name_hint
    dot.result.replace_all_uses_with(wait.result)
    wait.operands = [dot.result]
    Rewriter.insert_op(wait, InsertPoint.after(after))


def _place_waits(kernel: tile.KernelOp, plan: Schedule) -> None:
    """The waits of the loops the schedule runs in body order, as it lists them; an MMA
    outside the main loops (nothing runs beside it) is awaited right after it. The waits
    of the loops `coarse-pipeline` rewrites are placed by it."""
    planned: set[tile.DotOp] = set()
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp):
            continue
        for k, loop in enumerate(main_loops(part)):
            lp = plan.loop(part.role.data, k)
            if lp is None:
                continue
            sched = scheduled_ops(loop.body.block)
            planned.update(o for o in sched if isinstance(o, tile.DotOp))
            if not lp.in_body_order:
                continue
            for w in lp.waits:
                dot = sched[w.dot]
                assert isinstance(dot, tile.DotOp)
                _wait(dot, w.pending, sched[lp.ops[w.at - 1].index])
    for consumed in [o for o in kernel.walk() if isinstance(o, aref.ConsumedOp)]:
        for dot in releasing_dots(consumed):
            uses = list(dot.result.uses)
            if dot in planned or (
                uses and all(isinstance(u.operation, hopper.WgmmaWaitOp) for u in uses)
            ):
                continue  # placed by the schedule, or already awaited (it reads several arefs)
            _wait(dot, 0, dot)


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """Applies the ring depth and release lag of every aref in `#tawac.schedule`, and the
    waits of the MMAs of loops run in body order."""

    name = "pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            apply_kernel(kernel)


def apply_kernel(kernel: tile.KernelOp) -> None:
    plan = schedule.planned(kernel, "pipeline")
    lag: dict[SSAValue, int] = {}
    for create in [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]:
        a = plan.aref(create.ident)
        assert a is not None  # plan checked every aref has an entry
        lag[set_depth(create, a.depth).result] = a.lag
    _place_waits(kernel, plan)
    for consumed in [o for o in kernel.walk() if isinstance(o, aref.ConsumedOp)]:
        if lag[consumed.aref]:
            _defer_release(consumed, lag[consumed.aref])
