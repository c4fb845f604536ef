"""`pipeline`: multi-buffering and fine-grained MMA pipelining (Tawa sections 4.3 and
4.4), applying each aref's depth D and release lag P from `#tawac.schedule` (decided by
the planner: rings of `stages` slots for arefs written in a loop, one slot, or two for a
per-tile operand of a persistent kernel, for the others; P = mma-depth where allowed).

- An aref of depth D is a ring of D slots, so the producer runs up to D transfers ahead.
- With P > 0, in a consumer loop whose body reads one aref slot per iteration and feeds it to one
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
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.mma import can_release_late, releasing_dots
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile


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
    dots = releasing_dots(consumed)
    if depth == 0:
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


def _wait_after(dot: tile.DotOp, pending: int) -> None:
    uses = list(dot.result.uses)
    if uses and all(isinstance(u.operation, hopper.WgmmaWaitOp) for u in uses):
        return  # already awaited (a dot reading the slots of several arefs)
    wait = hopper.WgmmaWaitOp(dot.result, pending)
    dot.result.replace_all_uses_with(wait.result)
    wait.operands = [dot.result]
    Rewriter.insert_op(wait, InsertPoint.after(dot))


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """Applies the ring depth and release lag of every aref in `#tawac.schedule`."""

    name = "pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            apply_kernel(kernel)


def apply_kernel(kernel: tile.KernelOp) -> None:
    plan = schedule.planned(kernel, "pipeline")
    creates = [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]
    if len(creates) != len(plan.arefs):
        raise CompileError(
            f"pipeline: the schedule plans {len(plan.arefs)} arefs, the kernel has {len(creates)}",
            kernel,
        )
    lag: dict[SSAValue, int] = {}
    for create, a in zip(creates, plan.arefs, strict=True):
        lag[set_depth(create, a.depth).result] = a.lag
    for consumed in [o for o in kernel.walk() if isinstance(o, aref.ConsumedOp)]:
        n = lag[consumed.aref]
        if n and not can_release_late(consumed):
            raise CompileError(
                f"pipeline: a release lag of {n} needs the slot's one MMA to be a pure "
                "accumulation chain in a loop (its wgmmas stay in flight)",
                consumed,
            )
        _pipeline_consumed(consumed, n)
