"""`coarse-pipeline`: issue the next iteration's first MMA before this iteration's
elementwise work (Tawa section 4.7, coarse-grained pipelining).  Runs on the aref level,
after `pipeline` (and `persistent`).

It applies to a consumer loop whose first MMA reads a slot of the loop's aref and a
loop-invariant operand into a zero accumulator, e.g. attention's S_j = Q K_j^T:

    for j:                              if trips >= 1:
      k, v = get[j]                       k0 = get[0]; S = dot(q, k0); wait S
      s = dot(q, k, 0); wait s    ==>     for j < last (carrying S):
      ... softmax(s) ...                    k, v = get[j]
      acc = dot(p, v, acc) ...              kn = get[j+1]; Sn = dot(q, kn, 0)   (in flight)
                                            ... softmax(S) ... acc = dot(p, v, acc); wait
                                            wait Sn; carry Sn
                                          the last iteration, peeled, without the next MMA

so the MMA of S_{j+1} runs under softmax_j.  Holding slots j and j+1 together is what
the aref allows (a second get of a completed phase passes at once); the producer waits
for the release of j before refilling, so two stages suffice.  Every wgmma result is
waited for before it is copied (carried or returned): the copy of an accumulator still
in flight would read garbage.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.dialects import aref, hopper, tile


@dataclass
class _Match:
    loop: scf.ForOp
    get: aref.GetOp
    dot: tile.DotOp
    wait: hopper.WgmmaWaitOp
    index_ops: list[Operation]


def _defined_outside(v: SSAValue, loop: scf.ForOp) -> bool:
    owner = v.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is loop:
            return False
        op = op.parent_op()
    return True


def _index_slice(get: aref.GetOp, loop: scf.ForOp) -> list[Operation] | None:
    """The body ops computing the get's index, in order, if they depend only on the
    induction variable and values defined outside the loop."""
    body = loop.body.block
    needed: set[Operation] = set()
    work = [get.index]
    while work:
        v = work.pop()
        if v is body.args[0] or _defined_outside(v, loop):
            continue
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not body:
            return None
        if owner.regions or not isinstance(
            owner,
            arith.ConstantOp
            | arith.AddiOp
            | arith.SubiOp
            | arith.MuliOp
            | arith.DivUIOp
            | arith.DivSIOp,
        ):
            return None
        if owner not in needed:
            needed.add(owner)
            work.extend(owner.operands)
    return [o for o in body.ops if o in needed]


def _match(loop: scf.ForOp) -> _Match | None:
    body = loop.body.block
    for get in [o for o in body.ops if isinstance(o, aref.GetOp)]:
        for dot in [o for o in body.ops if isinstance(o, tile.DotOp)]:
            ops = (dot.lhs, dot.rhs)
            from_get = [v for v in ops if v.owner is get]
            others = [v for v in ops if v.owner is not get]
            if len(from_get) != 1 or len(others) != 1 or not _defined_outside(others[0], loop):
                continue
            if not _defined_outside(dot.acc, loop) or not _is_zero(dot.acc):
                continue
            uses = list(dot.result.uses)
            if len(uses) != 1 or not isinstance(uses[0].operation, hopper.WgmmaWaitOp):
                continue
            wait = uses[0].operation
            assert isinstance(wait, hopper.WgmmaWaitOp)
            if wait.pending.value.data != 0:
                continue
            index_ops = _index_slice(get, loop)
            if index_ops is None:
                continue
            return _Match(loop, get, dot, wait, index_ops)
    return None


def _is_zero(v: SSAValue) -> bool:
    op = v.owner
    if not isinstance(op, arith.ConstantOp):
        return False
    vals = getattr(op.value, "get_values", lambda: [1])()
    return all(x == 0 for x in vals)


def _issue_first_mma(
    m: _Match, iv: SSAValue, mapping: dict[SSAValue, SSAValue], at: Block
) -> tile.DotOp:
    """get + the matched dot for induction value `iv`, appended to `at`."""
    local = dict(mapping)
    local[m.loop.body.block.args[0]] = iv
    for op in m.index_ops:
        at.add_op(op.clone(local))
    get = aref.GetOp(m.get.aref, local.get(m.get.index, m.get.index))
    at.add_op(get)
    for old, new in zip(m.get.values, get.values, strict=True):
        local[old] = new
    dot = m.dot.clone(local)
    at.add_op(dot)
    return dot


def _clone_body(m: _Match, mapping: dict[SSAValue, SSAValue], at: Block) -> list[SSAValue]:
    """The loop body without the matched dot and its wait; returns the yielded values."""
    for op in m.loop.body.block.ops:
        if op is m.dot or op is m.wait:
            continue
        if isinstance(op, scf.YieldOp):
            return [mapping.get(v, v) for v in op.operands]
        at.add_op(op.clone(mapping))
    raise AssertionError("loop body without yield")


def transform(m: _Match) -> None:
    loop = m.loop
    body = loop.body.block
    iv_old, args_old = body.args[0], body.args[1:]
    lb, ub, step = loop.lb, loop.ub, loop.step

    then = Block()
    # trips and the last induction value
    zero, one = (arith.ConstantOp.from_int_and_width(x, IndexType()) for x in (0, 1))
    span = arith.SubiOp(ub, lb)
    trips = arith.CeilDivSIOp(span.result, step)
    has = arith.CmpiOp(trips.result, one.result, "sge")
    Rewriter.insert_op([zero, one, span, trips, has], InsertPoint.before(loop))

    # then: prologue, the steady loop over [lb, last), the peeled last iteration
    dec = arith.SubiOp(trips.result, one.result)
    back = arith.MuliOp(dec.result, step)
    last = arith.AddiOp(lb, back.result)
    then.add_ops([dec, back, last])
    first = _issue_first_mma(m, lb, {}, then)
    first_w = hopper.WgmmaWaitOp(first.result, 0)
    then.add_op(first_w)

    steady = Block(arg_types=[IndexType(), *[a.type for a in args_old], m.wait.result.type])
    iv, args, s_cur = steady.args[0], steady.args[1:-1], steady.args[-1]
    mapping: dict[SSAValue, SSAValue] = {iv_old: iv, m.wait.result: s_cur}
    mapping.update(zip(args_old, args, strict=True))
    # the body up to (and with) its get, then the next iteration's first MMA
    nxt = arith.AddiOp(iv, step)
    ops = list(body.ops)
    cut = ops.index(m.get) + 1
    for op in ops[:cut]:
        if op is not m.dot and op is not m.wait:
            steady.add_op(op.clone(mapping))
    steady.add_op(nxt)
    next_dot = _issue_first_mma(m, nxt.result, mapping, steady)
    rest = Block()
    yielded = []
    for op in ops[cut:]:
        if op is m.dot or op is m.wait:
            continue
        if isinstance(op, scf.YieldOp):
            yielded = [mapping.get(v, v) for v in op.operands]
            break
        rest.add_op(op.clone(mapping))
    for op in list(rest.ops):
        op.detach()
        steady.add_op(op)
    next_w = hopper.WgmmaWaitOp(next_dot.result, 0)
    steady.add_ops([next_w, scf.YieldOp(*yielded, next_w.result)])
    new_loop = scf.ForOp(lb, last.result, step, [*loop.iter_args, first_w.result], Region(steady))
    then.add_op(new_loop)

    peel_map: dict[SSAValue, SSAValue] = {iv_old: last.result, m.wait.result: new_loop.results[-1]}
    peel_map.update(zip(args_old, new_loop.results[:-1], strict=True))
    final = _clone_body(m, peel_map, then)
    then.add_op(scf.YieldOp(*final))

    otherwise = Block([scf.YieldOp(*loop.iter_args)])
    guarded = scf.IfOp(has.result, [r.type for r in loop.results], Region(then), Region(otherwise))
    Rewriter.insert_op(guarded, InsertPoint.before(loop))
    for old, new in zip(loop.results, guarded.results, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop, safe_erase=False)


@dataclass(frozen=True)
class CoarsePipelinePass(ModulePass):
    name = "coarse-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for part in [o for o in op.walk() if isinstance(o, aref.PartitionOp)]:
            if part.role.data != "consumer":
                continue
            for loop in [o for o in part.walk() if isinstance(o, scf.ForOp)]:
                m = _match(loop)
                if m is not None:
                    transform(m)
