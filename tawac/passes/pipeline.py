"""`pipeline{stages=D mma-depth=P}`: multi-buffering and fine-grained MMA pipelining
(Tawa sections 4.3 and 4.4).

- Every aref written in a loop becomes a ring of D slots, so the producer runs up to D
  transfers ahead; one written once per program (a Q tile) keeps a single slot.
- In a consumer loop whose body reads one aref slot per iteration and feeds it to one
  `tile.dot` whose result is only carried to the next iteration, the MMA becomes
  asynchronous: after issuing the MMA of iteration i the consumer waits until at most P
  MMA groups are in flight (`hopper.wgmma_wait pending P`), which guarantees that the MMA
  of iteration i-P has finished reading its operands, and only then releases the slot of
  iteration i-P (`aref.consumed %r[%it - P]`, skipped while `%it < P`).  Releasing a slot
  whose MMA may still be reading it is the classic race; this ordering rules it out.
  After the loop, `hopper.wgmma_wait pending 0` makes the accumulator final.
- Other dots get `hopper.wgmma_wait pending 0` right after them.

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
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile
from tawac.schedule.smem import kernel_plan

"""Marks a release `pipeline` moved P iterations later (drained after the loop)."""


def set_depth(create: aref.CreateOp, depth: int) -> aref.CreateOp:
    """Replace `create` by an aref of the same payload with `depth` slots."""
    t = create.result.type
    assert isinstance(t, aref.ArefType)
    new = aref.CreateOp(aref.ArefType(list(t.payload.data), depth))
    new.location = create.location
    new.result.name_hint = create.result.name_hint
    Rewriter.replace_op(create, new)
    return new


def _pipeline_consumed(consumed: aref.ConsumedOp, depth: int) -> None:
    """Defer the release in `consumed`'s loop body by `depth` iterations."""
    block = consumed.parent_block()
    assert block is not None
    loop = block.parent_op()
    dots = [
        op
        for op in block.ops
        if isinstance(op, tile.DotOp)
        and any(
            isinstance(v.owner, aref.GetOp) and v.owner.aref == consumed.aref
            for v in (op.lhs, op.rhs)
        )
    ]
    carried = isinstance(loop, scf.ForOp) and len(dots) == 1 and _accumulates(dots[0], block)
    if not carried or depth == 0:
        for d in dots:
            _wait_after(d, 0)
        return
    assert isinstance(loop, scf.ForOp)
    dot = dots[0]
    wait = hopper.WgmmaWaitOp(dot.result, depth)
    wait.result.name_hint = dot.result.name_hint
    dot.result.replace_all_uses_with(wait.result)
    wait.operands = [dot.result]
    Rewriter.insert_op(wait, InsertPoint.after(dot))

    cp = arith.ConstantOp.from_int_and_width(depth, IndexType())
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


def _accumulates(dot: tile.DotOp, body: Block) -> bool:
    """Whether `dot` is a pure MMA accumulation chain: its result only goes to the yield,
    and the iter arg it is yielded into is only this dot's accumulator.  Only then may
    the MMA stay in flight across the back edge (wgmma accumulates in place; any other
    reader, such as attention's rescale O * alpha, needs the result awaited)."""
    uses = list(dot.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, scf.YieldOp):
        return False
    arg = body.args[1 + uses[0].index]
    return [(u.operation, u.index) for u in arg.uses] == [(dot, 2)]


def _in_loop(op) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, aref.PartitionOp):
        if isinstance(parent, scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


def _wait_after(dot: tile.DotOp, pending: int) -> None:
    uses = list(dot.result.uses)
    if uses and all(isinstance(u.operation, hopper.WgmmaWaitOp) for u in uses):
        return  # already awaited (a dot reading the slots of several arefs)
    wait = hopper.WgmmaWaitOp(dot.result, pending)
    dot.result.replace_all_uses_with(wait.result)
    wait.operands = [dot.result]
    Rewriter.insert_op(wait, InsertPoint.after(dot))


def _looped(create: aref.CreateOp) -> bool:
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
            plan = kernel_plan(kernel, {c: d if _looped(c) else 1 for c in creates}, staging)
            if plan.fits():
                return d
    return 1


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    name = "pipeline"

    stages: int = 0
    """Ring depth D; 0 picks the deepest of 3, 2, 1 that fits in shared memory."""
    mma_depth: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stages == 0:
            for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
                PipelinePass(auto_stages(kernel), self.mma_depth)._apply_kernel(kernel)
            return
        self._apply_kernel(op)

    def _apply_kernel(self, op) -> None:
        if self.stages < 1:
            raise CompileError(f"pipeline: stages must be >= 1, got {self.stages}")
        if not 0 <= self.mma_depth < self.stages or self.mma_depth > 7:
            raise CompileError(
                f"pipeline: mma-depth must satisfy 0 <= mma-depth < stages and <= 7 "
                f"(got mma-depth={self.mma_depth}, stages={self.stages}); otherwise the "
                "producer waits for a slot the consumer cannot release yet"
            )
        for create in [o for o in op.walk() if isinstance(o, aref.CreateOp)]:
            # An aref written once per program (outside any loop) needs no ring.
            set_depth(create, self.stages if _looped(create) else 1)
        for consumed in [o for o in op.walk() if isinstance(o, aref.ConsumedOp)]:
            _pipeline_consumed(consumed, self.mma_depth)
        kernels = [op] if isinstance(op, tile.KernelOp) else list(op.walk())
        for kernel in [o for o in kernels if isinstance(o, tile.KernelOp)]:
            schedule.update(kernel, stages=self.stages, mma_depth=self.mma_depth)
