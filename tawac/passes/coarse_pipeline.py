"""`coarse-pipeline`: overlap a consumer loop's elementwise work with its own MMAs
(Tawa section 4.7, coarse-grained pipelining; FlashAttention-3's intra-warpgroup
overlap).  Runs on the aref level, after `pipeline` (and `persistent`).

It applies to a consumer loop whose body ends in an *accumulating MMA*: a `tile.dot`
into a loop-carried accumulator, awaited (`wgmma_wait pending 0`) and yielded back to
the same iter arg, e.g. attention's O = O * alpha + P V.  The body splits in two stages:

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

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.dialects import aref, hopper, tile
from tawac.passes.warp_specialize import SCALAR_OPS

# Marks a loop this pass made: its body already holds a deferred stage.
_DONE = "tawac.coarse_pipelined"


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


def _top(op: Operation, body: Block) -> Operation | None:
    return body.find_ancestor_op_in_block(op)


def _in_body(v: SSAValue, body: Block) -> bool:
    owner = v.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op.parent_block() is body:
            return True
        op = op.parent_op()
    return isinstance(owner, Block) and owner is body


def _index_slice(v: SSAValue, body: Block) -> list[Operation] | None:
    """The body's scalar ops computing `v` from the induction variable and values
    defined outside the loop, or None if `v` needs anything else."""
    needed: set[Operation] = set()
    work = [v]
    while work:
        x = work.pop()
        if x is body.args[0] or not _in_body(x, body):
            continue
        owner = x.owner
        if not isinstance(owner, SCALAR_OPS) or owner.parent_block() is not body:
            return None
        if owner not in needed:
            needed.add(owner)
            work.extend(owner.operands)
    return [o for o in body.ops if o in needed]


def _split(loop: scf.ForOp) -> _Split | None:
    body = loop.body.block
    yield_op = body.last_op
    if not isinstance(yield_op, scf.YieldOp):
        return None
    for i, arg in enumerate(body.args[1:]):
        s = _split_at(loop, i, arg, yield_op)
        if s is not None:
            return s
    return None


def _split_at(loop: scf.ForOp, i: int, arg: SSAValue, yield_op: scf.YieldOp) -> _Split | None:
    body = loop.body.block
    ops = list(body.ops)
    # stage B: the forward slice of the accumulator iter arg
    stage_b: set[Operation] = set()
    work = [arg]
    while work:
        v = work.pop()
        for use in v.uses:
            top = _top(use.operation, body)
            if top is None or top is yield_op or top in stage_b:
                continue
            stage_b.add(top)
            work.extend(top.results)
    mmas = [o for o in stage_b if isinstance(o, tile.DotOp)]
    if len(mmas) != 1:
        return None
    mma = mmas[0]
    waits = [u.operation for u in mma.result.uses]
    if len(waits) != 1 or not isinstance(waits[0], hopper.WgmmaWaitOp):
        return None
    wait = waits[0]
    if wait.pending.value.data != 0 or [u.operation for u in wait.result.uses] != [yield_op]:
        return None
    if yield_op.operands[i] is not wait.result:
        return None
    if any(isinstance(o, hopper.WgmmaWaitOp) and o is not wait for o in stage_b):
        return None
    # plus the gets and broadcasts only stage B uses, and the releases of those gets
    for op in reversed(ops):
        if op in stage_b or not isinstance(op, aref.GetOp | tile.BroadcastOp):
            continue
        users = [_top(u.operation, body) for r in op.results for u in r.uses]
        if users and all(u in stage_b for u in users):
            stage_b.add(op)
    gets = [o for o in stage_b if isinstance(o, aref.GetOp)]
    for g in gets:
        t = g.aref.type
        if not isinstance(t, aref.ArefType) or t.depth.data < 2:
            # its slot j-1 is still held while the producer must fill slot j: one slot
            # would deadlock
            return None
    for op in ops:
        if isinstance(op, aref.ConsumedOp) and any(g.aref == op.aref for g in gets):
            if ops.index(op) < ops.index(wait):
                return None
            stage_b.add(op)
    order = [o for o in ops if o in stage_b]
    if any(isinstance(o, scf.YieldOp) or o.regions for o in order):
        return None
    # stage A must not read stage B's values (they only leave through the yield)
    stage_a = [o for o in ops if o not in stage_b and o is not yield_op]
    for op in stage_a:
        for inner in op.walk():
            if any(isinstance(v.owner, Operation) and v.owner in stage_b for v in inner.operands):
                return None
    for j, v in enumerate(yield_op.operands):
        if j != i and isinstance(v.owner, Operation) and v.owner in stage_b:
            return None
    cuts = [o for o in stage_a if isinstance(o, hopper.WgmmaWaitOp)]
    if not cuts:
        return None
    # stage B's operands from stage A: index math (recomputed) or carried registers
    index_ops: list[Operation] = []
    carried: list[SSAValue] = []
    for op in order:
        for v in op.operands:
            if (
                not _in_body(v, body)
                or v is arg
                or (isinstance(v.owner, Operation) and v.owner in stage_b)
            ):
                continue
            if isinstance(v.type, IndexType):
                sl = _index_slice(v, body)
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
    return _Split(loop, i, order, mma, wait, index_ops, carried, cuts[0])


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
    new_loop.attributes[_DONE] = UnitAttr()
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
    name = "coarse-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for part in [o for o in op.walk() if isinstance(o, aref.PartitionOp)]:
            if part.role.data != "consumer":
                continue
            while True:
                loops = [
                    o for o in part.walk() if isinstance(o, scf.ForOp) and _DONE not in o.attributes
                ]
                s = next((x for x in map(_split, loops) if x is not None), None)
                if s is None:
                    break
                transform(s)
