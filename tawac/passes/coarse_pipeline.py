"""`coarse-pipeline`: overlap a consumer loop's elementwise work with its own MMAs
(Tawa section 4.7, coarse-grained pipelining; FlashAttention-3's intra-warpgroup
overlap).  Runs on the aref level, after `pipeline` (and `persistent`), and expands the
two-stage loop schedules of `#tawac.schedule` (the heuristic planner's
`two_stage_split` decides them; this pass checks that a schedule has the shape below).

The planner plans it for a consumer loop whose body ends in an *accumulating MMA*: a
`tile.dot` into a loop-carried accumulator, awaited (`wgmma_wait pending 0`) and yielded
back to the same iter arg, e.g. attention's O = O * alpha + P V.  The body splits in two stages:

- stage B: every op that depends on the accumulator iter arg (the rescale, the MMA, its
  wait), plus the ops only stage B uses (the get of V's slot, broadcasts), plus the
  release of those slots;
- stage A: everything else (S = Q K^T, its wait, the softmax producing P and alpha).

Stage B of iteration j-1 is deferred into iteration j, issued right after stage A's first
MMA, and awaited at the end:

    for j:                            if trips >= 1:
      S = dot(q, k_j); wait S           A(j0)                      (S, softmax -> P, alpha)
      softmax(S) -> P, alpha     ==>    for j in (j0, end):        (carrying P, alpha)
      v = get[j]                          S = dot(q, k_j)          (in flight)
      O = dot(P, v, O * alpha)            v = get[j-1]; O = dot(P', v, O * alpha')
      wait O; consumed[j]                 wait S (pending 1)      (P V still in flight)
                                          softmax(S) -> P, alpha   (under P' V)
                                          wait O; consumed[j-1]
                                        B(last)

so each warp group's softmax of S_j runs while the tensor cores compute P_{j-1} V_{j-1}.
The values stage B takes from stage A (P as 16-bit registers, alpha) are carried to the
next iteration; every MMA result is awaited before it is carried or returned (a copy of a
register still in flight reads garbage).  V's slot j-1 is released one iteration later
than before, so its ring needs at least two slots; K's slot is released as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.diagnostics import CompileError
from tawac.dialects import aref, hopper, tile
from tawac.dialects.schedule import LoopPlan
from tawac.passes.warp_specialize import SCALAR_OPS
from tawac.schedule.loops import carried_values, main_loops, scheduled_ops


@dataclass
class _Split:
    loop: scf.ForOp
    acc_index: int
    """The position of the accumulator among the iter args."""
    stage_b: list[Operation]
    """Stage B's ops in body order: ... the MMA, its wait, ... the releases."""
    mma: tile.DotOp
    wait: hopper.WgmmaWaitOp
    index_ops: list[Operation]
    """Scalar ops stage B needs, recomputed from the previous induction value."""
    carried: list[SSAValue]
    """Stage A values stage B reads: carried to the next iteration."""
    cut: hopper.WgmmaWaitOp
    """Stage A's first wait: stage B's MMA is issued right before it."""


def _fail(loop: scf.ForOp, plan: LoopPlan, why: str) -> CompileError:
    return CompileError(
        f"coarse-pipeline: the schedule of {plan.role} loop {plan.loop} cannot be applied: {why}",
        loop,
    )


def split_from_plan(loop: scf.ForOp, plan: LoopPlan) -> _Split:
    """The two-stage split the loop schedule describes: stage-1 ops are deferred by one
    iteration and issued right after the stage-0 op before them in issue order (an MMA);
    stage 0 keeps its body order."""
    body = loop.body.block
    sched = scheduled_ops(body)
    if sorted(o.index for o in plan.ops) != list(range(len(sched))) or any(
        sched[o.index].name != o.op for o in plan.ops
    ):
        listed = ", ".join(f"{o.index} {o.op}" for o in sorted(plan.ops, key=lambda o: o.index))
        found = ", ".join(f"{n} {o.name}" for n, o in enumerate(sched))
        raise _fail(loop, plan, f"it lists [{listed}], the loop has [{found}]")
    if plan.stages > 2:
        raise _fail(loop, plan, "only two-stage schedules are expanded so far")
    stage_b_ops = {sched[o.index] for o in plan.ops if o.stage == 1}
    mmas = [o for o in stage_b_ops if isinstance(o, tile.DotOp)]
    if len(mmas) != 1:
        raise _fail(loop, plan, "stage 1 must hold exactly one MMA")
    mma = mmas[0]
    waits = [u.operation for u in mma.result.uses]
    if len(waits) != 1 or not isinstance(waits[0], hopper.WgmmaWaitOp):
        raise _fail(loop, plan, "stage 1's MMA must be awaited once")
    wait = waits[0]
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    uses = [(u.operation, u.index) for u in wait.result.uses]
    if wait.pending.value.data != 0 or len(uses) != 1 or uses[0][0] is not yield_op:
        raise _fail(loop, plan, "stage 1's MMA must be an accumulation yielded back")
    acc_index = uses[0][1]
    # the expected issue order: A up to the cut, B up to its MMA, the rest of A, of B
    order = [sched[o.index] for o in plan.ops]
    stage_a = [o for o in sched if o not in stage_b_ops]
    b = [o for o in sched if o in stage_b_ops]
    first_b = order.index(b[0])
    cut_op = order[first_b - 1] if first_b > 0 else None
    if not isinstance(cut_op, tile.DotOp) or cut_op in stage_b_ops:
        raise _fail(loop, plan, "stage 1 must be issued right after a stage-0 MMA")
    b_issue, b_finish = b[: b.index(mma) + 1], b[b.index(mma) + 1 :]
    head = stage_a[: stage_a.index(cut_op) + 1]
    tail = stage_a[stage_a.index(cut_op) + 1 :]
    if order != head + b_issue + tail + b_finish:
        raise _fail(loop, plan, "its issue order is not a one-iteration deferral")
    cuts = [u.operation for u in cut_op.result.uses]
    if len(cuts) != 1 or not isinstance(cuts[0], hopper.WgmmaWaitOp):
        raise _fail(loop, plan, "the stage-0 MMA before stage 1 must be awaited once")
    stage_b = stage_b_ops | {wait}
    found = carried_values(body, stage_b, acc_index)
    if found is None:
        raise _fail(loop, plan, "a value crossing the stages cannot be carried")
    index_ops, carried = found
    stage_b_list = [o for o in body.ops if o in stage_b]
    return _Split(loop, acc_index, stage_b_list, mma, wait, index_ops, carried, cuts[0])


def transform(s: _Split) -> None:
    loop = s.loop
    body = loop.body.block
    iv_old, args_old = body.args[0], list(body.args[1:])
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    lb, ub, step = loop.lb, loop.ub, loop.step
    stage_b = set(s.stage_b)
    stage_a = [o for o in body.ops if o not in stage_b and o is not yield_op]
    b_issue = s.stage_b[: s.stage_b.index(s.wait)]
    b_finish = s.stage_b[s.stage_b.index(s.wait) :]

    # trips and the last induction value
    one = arith.ConstantOp.from_int_and_width(1, IndexType())
    span = arith.SubiOp(ub, lb)
    trips = arith.CeilDivSIOp(span.result, step)
    has = arith.CmpiOp(trips.result, one.result, "sge")
    Rewriter.insert_op([one, span, trips, has], InsertPoint.before(loop))

    then = Block()
    dec = arith.SubiOp(trips.result, one.result)
    back = arith.MuliOp(dec.result, step)
    last = arith.AddiOp(lb, back.result)
    start = arith.AddiOp(lb, step)
    then.add_ops([dec, back, last, start])

    # prologue: stage A of the first iteration
    pro: dict[SSAValue, SSAValue] = {iv_old: lb}
    pro.update(zip(args_old, loop.iter_args, strict=True))
    for op in stage_a:
        then.add_op(op.clone(pro))
    inits = [pro.get(v, v) for v in yield_op.operands]
    inits[s.acc_index] = loop.iter_args[s.acc_index]
    inits += [pro[v] for v in s.carried]

    # the steady loop over the remaining iterations
    steady = Block(
        arg_types=[IndexType(), *[a.type for a in args_old], *[v.type for v in s.carried]]
    )
    iv = steady.args[0]
    n_args = len(args_old)
    cur: dict[SSAValue, SSAValue] = {iv_old: iv}
    cur.update(zip(args_old, steady.args[1 : 1 + n_args], strict=True))
    prev_iv = arith.SubiOp(iv, step)
    steady.add_op(prev_iv)
    prev: dict[SSAValue, SSAValue] = {iv_old: prev_iv.result}
    prev[args_old[s.acc_index]] = steady.args[1 + s.acc_index]
    prev.update(zip(s.carried, steady.args[1 + n_args :], strict=True))
    cut = stage_a.index(s.cut)
    for op in stage_a[:cut]:
        steady.add_op(op.clone(cur))
    for op in s.index_ops:
        steady.add_op(op.clone(prev))
    for op in b_issue:
        steady.add_op(op.clone(prev))
    issued_before = {o for o in stage_a[:cut] if isinstance(o, tile.DotOp)}
    for op in stage_a[cut:]:
        if isinstance(op, hopper.WgmmaWaitOp) and op.acc.owner in issued_before:
            # stage B's MMA was committed after this one: it may stay in flight
            w = hopper.WgmmaWaitOp(cur[op.acc], op.pending.value.data + 1)
            w.result.name_hint = op.result.name_hint
            cur[op.result] = w.result
            steady.add_op(w)
            continue
        steady.add_op(op.clone(cur))
    for op in b_finish:
        steady.add_op(op.clone(prev))
    outs = [cur.get(v, v) for v in yield_op.operands]
    outs[s.acc_index] = prev[s.wait.result]
    outs += [cur[v] for v in s.carried]
    steady.add_op(scf.YieldOp(*outs))
    new_loop = scf.ForOp(start.result, ub, step, inits, Region(steady))
    then.add_op(new_loop)

    # epilogue: stage B of the last iteration
    epi: dict[SSAValue, SSAValue] = {iv_old: last.result}
    epi[args_old[s.acc_index]] = new_loop.results[s.acc_index]
    epi.update(zip(s.carried, new_loop.results[n_args:], strict=True))
    for op in [*s.index_ops, *s.stage_b]:
        then.add_op(op.clone(epi))
    results = list(new_loop.results[:n_args])
    results[s.acc_index] = epi[s.wait.result]
    then.add_op(scf.YieldOp(*results))

    otherwise = Block([scf.YieldOp(*loop.iter_args)])
    guarded = scf.IfOp(has.result, [r.type for r in loop.results], Region(then), Region(otherwise))
    Rewriter.insert_op(guarded, InsertPoint.before(loop))
    for old, new in zip(loop.results, guarded.results, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop, safe_erase=False)
    _drop_dead_index_ops(guarded)


def _drop_dead_index_ops(root: Operation) -> None:
    """Remove the index math the split left without uses (the slot indices stage B now
    computes itself)."""
    changed = True
    while changed:
        changed = False
        for op in list(root.walk()):
            if isinstance(op, SCALAR_OPS) and all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


@dataclass(frozen=True)
class CoarsePipelinePass(ModulePass):
    """Applies the loop schedules of `#tawac.schedule` that are not expanded yet, and
    marks them expanded."""

    name = "coarse-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            plan = schedule.of(kernel)
            todo = [lp for lp in plan.loops if not lp.expanded]
            if not todo:
                continue
            parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
            done = []
            for lp in plan.loops:
                if lp.expanded:
                    done.append(lp)
                    continue
                part = next((p for p in parts if p.role.data == lp.role), None)
                loops = main_loops(part) if part is not None else []
                if lp.loop >= len(loops):
                    raise CompileError(
                        f"coarse-pipeline: the schedule names {lp.role} loop {lp.loop}, which "
                        "the kernel does not have",
                        kernel,
                    )
                transform(split_from_plan(loops[lp.loop], lp))
                done.append(dataclasses.replace(lp, expanded=True))
            schedule.update(kernel, loops=tuple(done))
