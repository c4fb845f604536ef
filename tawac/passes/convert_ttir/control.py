"""Control flow: `scf.for` -> `scf.for` over index (float data carried, pointers and
offsets rebuilt), a persistent loop over tiles -> its body once, `scf.if` on a scalar ->
`scf.if` (float data yielded), `scf.while` without loop-carried values (a lock's spin,
`while tl.atomic_cas(Lock, 0, 1) == 1: pass`) -> `scf.while`, `tt.return` ->
`tile.return`."""

from __future__ import annotations

import dataclasses

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, BlockArgument, Region, SSAValue

from tawac.analysis.pointers import PointerError
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _is_float, _located
from tawac.passes.convert_ttir.dispatch import _body, converts
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.scalars import _grid_stride
from tawac.passes.convert_ttir.tensors import scalar_atomic


def _persistent(em: _Emitter, op: scf.ForOp) -> bool:
    return _grid_stride(op) is not None


@converts(scf.ForOp, when=_persistent)
def _tiles(em: _Emitter, loop: scf.ForOp) -> None:
    """A persistent loop over tiles (`_grid_stride`): its body once, its tile id the
    program symbol the plan's block indices are computed from (tawac's grid visits each
    tile once; its own `persistent` pass makes the kernel persistent again)."""
    if any(_is_float(a) for a in loop.iter_args):
        raise _error("a persistent loop that carries data from one tile to the next", loop)
    for r in loop.results:
        if r.uses:
            raise _error("a value of a persistent loop used after it", loop)
    _body(em, loop.body.block)


@converts(scf.ForOp)
def _loop(em: _Emitter, loop: scf.ForOp) -> None:
    """`for k in range(cdiv(S, B))` -> `for kk in range(0, S, B)`, or `for i in
    range(lo, hi, B)` (bounds of the program ids, sizes and constants) -> the same over
    index; float data carried only (pointers and offsets are rebuilt from the plan)."""
    lb, ub, step, scale = _bounds(em, loop)
    keep = [j for j, a in enumerate(loop.iter_args) if _is_float(a)]
    inits = [em.get(loop.iter_args[j], loop) for j in keep]
    body = Block(arg_types=[IndexType(), *(v.type for v in inits)])
    new = scf.ForOp(lb, ub, em.const(step), inits, Region(body))
    em.add(new)
    inner = _inner(em, body)
    inner.ivs[loop.body.block.args[0]] = (body.args[0], scale)
    for j, arg in zip(keep, body.args[1:], strict=True):
        inner.values[loop.body.block.args[1 + j]] = arg
    _body(inner, loop.body.block)
    yielded = loop.body.block.last_op.operands
    inner.add(scf.YieldOp(*[inner.get(yielded[j], loop) for j in keep]))
    for j, r in zip(keep, new.results, strict=True):
        em.values[loop.results[j]] = r


def _inner(em: _Emitter, block: Block) -> _Emitter:
    """An emitter of a region's `block`: what the region converts stays in it."""
    return dataclasses.replace(
        em,
        block=block,
        values=dict(em.values),
        ivs=dict(em.ivs),
        expanded=dict(em.expanded),
        transposed=set(em.transposed),
    )


@converts(scf.IfOp)
def _if(em: _Emitter, op: scf.IfOp) -> None:
    """`if c:` on a scalar the tile kernel computes (`if count == 0` of a value read
    under a lock): `scf.if` of the converted branches, yielding float data only (tiles
    and f32 scalars: pointers and offsets are rebuilt, not carried)."""
    if any(not _is_float(r) for r in op.results):
        raise _error("an if that yields values other than float data", op)
    cond = em.get(op.cond, op)
    branches: list[Region] = []
    types = None
    for region in (op.true_region, op.false_region):
        if not region.blocks:
            continue
        end = region.block.last_op
        if not isinstance(end, scf.YieldOp) or len(end.operands) != len(op.results):
            raise _error(f"an if branch that does not yield its {len(op.results)} values", op)
        block = Block()
        inner = _inner(em, block)
        _body(inner, region.block)
        yielded = [inner.get(v, op) for v in end.operands]
        block.add_op(scf.YieldOp(*yielded))
        types = [v.type for v in yielded]
        branches.append(Region(block))
    new = scf.IfOp(cond, types or [], *branches)
    em.add(_located(new, op))
    for r, v in zip(op.results, new.results, strict=True):
        em.values[r] = v


@converts(scf.WhileOp)
def _while(em: _Emitter, op: scf.WhileOp) -> None:
    """`while tl.atomic_cas(Lock, 0, 1) == 1: pass`: `scf.while` of the converted
    condition region and body, carrying no values (a spin)."""
    if op.arguments or op.res:
        raise _error("a while loop that carries values (tawac converts a spin: none)", op)
    if not any(scalar_atomic(o) for o in op.before_region.walk()):
        raise _error(
            "a while loop whose condition reads no atomic (tawac converts a spin on a lock: "
            "a plain load may read a cached value forever)",
            op,
        )
    before, after = Block(), Block()
    _body(_inner(em, before), op.before_region.block)
    _body(_inner(em, after), op.after_region.block)
    after.add_op(scf.YieldOp())
    em.add(_located(scf.WhileOp([], [], Region(before), Region(after)), op))


@converts(scf.ConditionOp)
def _condition(em: _Emitter, op: scf.ConditionOp) -> None:
    """The spin's condition (it forwards no values)."""
    em.add(scf.ConditionOp(em.get(op.condition, op)))


def _bounds(em: _Emitter, loop: scf.ForOp) -> tuple[SSAValue, SSAValue, int, int]:
    """(lower bound, upper bound, step, B) of the new loop: a loop `0 to cdiv(S, B) step 1`
    runs `0 to S step B` (an old index k is the new one over B); any other loop with a
    constant step keeps its bounds (B = 1)."""
    counted = _count_of(em, loop)
    if counted is not None:
        size, step = counted
        return em.const(0), size, step, step
    try:
        lb, ub, step = (em.plan.reader.int_poly(v) for v in (loop.lb, loop.ub, loop.step))
    except PointerError as e:
        raise _error(e.message, e.op or loop) from None
    if set(step.terms) != {()} or step.terms[()] <= 0:
        raise _error("a loop whose step is not a positive constant", loop)
    return em.index(lb, loop), em.index(ub, loop), step.terms[()], 1


def _count_of(em: _Emitter, loop: scf.ForOp) -> tuple[SSAValue, int] | None:
    """(S as an index tensor dimension, B) of a loop `0 to (S + B - 1) / B step 1`."""
    ub = loop.ub.owner
    if not isinstance(ub, arith.DivSIOp) or not isinstance(ub.lhs.owner, arith.AddiOp):
        return None
    step = constant_int(ub.rhs)
    add = ub.lhs.owner
    if step is None or constant_int(add.rhs) != step - 1 or not isinstance(add.lhs, BlockArgument):
        return None
    if constant_int(loop.lb) != 0 or constant_int(loop.step) != 1:
        return None
    return _dim_of(em, add.lhs), step


def _dim_of(em: _Emitter, arg: BlockArgument) -> SSAValue:
    """The size argument `arg` in the tile kernel: a tensor dimension it sizes, or the
    kernel's `index` scalar."""
    found = em._dim_sized_by(arg)
    if found is None:
        raise _error(f"no tensor dimension is sized by {arg.name_hint}", None)
    return found


@converts(tt.ReturnOp)
def _return(em: _Emitter, op: tt.ReturnOp) -> None:
    em.add(tile.ReturnOp())


@converts(scf.YieldOp)
def _yield(em: _Emitter, op: scf.YieldOp) -> None:
    """Read by its loop's or branch's conversion (`_loop`, `_if`, `_while`)."""
