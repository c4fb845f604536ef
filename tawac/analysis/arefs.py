"""What an aref's transfers look like: written in a loop (it needs a ring deeper than
one slot) or once per tile at the partition's top level (a per-tile operand such as
attention's Q), whether consumer math reads its payload (into registers), and whether
later loops move the same tiles through it again (`rereads`: a norm's statistics loop,
then its output loop)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from tawac.analysis.loops import in_body, in_loop
from tawac.analysis.mma import is_mma_operand
from tawac.analysis.scalars import SCALAR_OPS, constant_int
from tawac.dialects import aref, tile


def looped(create: aref.CreateOp) -> bool:
    """The aref is written in a loop (it needs a ring deeper than one slot)."""
    return any(
        isinstance(u.operation, aref.PutOp) and in_loop(u.operation) for u in create.result.uses
    )


def per_tile(create: aref.CreateOp) -> bool:
    """Written, read and released once per program, at the partition's top level."""
    slots = [
        u.operation
        for u in create.result.uses
        if isinstance(u.operation, aref.PutOp | aref.GetOp | aref.ConsumedOp)
    ]
    return all(isinstance(o.parent_op(), aref.PartitionOp) for o in slots)


def read_by_math(create: aref.CreateOp) -> bool:
    """Consumer math (not a dot's A or B operand) reads a payload of the aref: its slot is
    read into registers."""
    return any(
        isinstance(u.operation, aref.GetOp)
        and any(not is_mma_operand(x) for v in u.operation.values for x in v.uses)
        for u in create.result.uses
    )


# -- tiles read again by a later loop (`reuse-slots`) ------------------------------------------


@dataclass(frozen=True)
class Rereads:
    """An aref whose transfers the loops of a chain repeat: the producer's loops (siblings,
    over the same bounds) each load the same tiles at the same iterations and put them;
    the consumer's loops (as many, siblings over the same bounds) each get and release one
    slot per iteration. `local[k]` is the k-th consumer loop's iteration number
    ((iv - lb) / step), the index the first loop's transfers have; `produced[k]` the k-th
    producer loop's."""

    puts: tuple[aref.PutOp, ...]
    gets: tuple[aref.GetOp, ...]
    releases: tuple[aref.ConsumedOp, ...]
    local: tuple[SSAValue, ...]
    produced: tuple[SSAValue, ...] = ()

    @property
    def producer_loops(self) -> list[scf.ForOp]:
        return [_loop_of(p) for p in self.puts]  # type: ignore[misc]

    @property
    def consumer_loops(self) -> list[scf.ForOp]:
        return [_loop_of(g) for g in self.gets]  # type: ignore[misc]


def last_reader(get: aref.GetOp) -> Operation:
    """The last op of `get`'s block that reads its payload (holding the read: an op whose
    region reads it counts), or the get itself: the slot may be released after it."""
    block = get.parent_block()
    assert block is not None
    last: Operation = get
    for v in get.values:
        for use in v.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is not None and block.get_operation_index(user) > block.get_operation_index(
                last
            ):
                last = user
    return last


def stays_in_ring(trips: SSAValue, depth: int) -> list[Operation]:
    """Ops computing `trips <= depth`: a program's `trips` transfers of a resident aref
    fit in its ring of `depth` slots, so its later loops read them there (the one test
    `reuse-slots` predicates the transfers on and `persistent` counts them by); the last
    op's result is the i1."""
    d = arith.ConstantOp.from_int_and_width(depth, IndexType())
    fits = arith.CmpiOp(trips, d.result, "sle")
    fits.result.name_hint = "resident"
    return [d, fits]


def _loop_of(op: Operation) -> scf.ForOp | None:
    """The loop whose body holds `op` directly."""
    parent = op.parent_op()
    return parent if isinstance(parent, scf.ForOp) else None


def _iteration(index: SSAValue, loop: scf.ForOp) -> tuple[SSAValue, bool] | None:
    """`index` as (the loop's iteration number (iv - lb) / step, whether offsets the loop
    does not change are added to it), or None where it has another form."""
    if _is_iteration(index, loop):
        return index, False
    owner = index.owner
    if not isinstance(owner, arith.AddiOp):
        return None
    for inner, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
        found = _iteration(inner, loop) if _invariant(other, loop) else None
        if found is not None:
            return found[0], True
    return None


def _is_iteration(v: SSAValue, loop: scf.ForOp) -> bool:
    """`v` is (iv - lb) / step of `loop` (iv / step where lb is the constant 0)."""
    div = v.owner
    if not isinstance(div, arith.DivUIOp) or div.rhs is not loop.step:
        return False
    iv = loop.body.block.args[0]
    num = div.lhs
    if num is iv:
        return constant_int(loop.lb) == 0
    sub = num.owner
    return isinstance(sub, arith.SubiOp) and sub.lhs is iv and sub.rhs is loop.lb


def _invariant(v: SSAValue, loop: scf.ForOp) -> bool:
    """`v` is the same at every iteration: defined outside the loop, or computed in its
    body by scalar ops from such values."""
    body = loop.body.block
    if v is body.args[0]:
        return False
    if not in_body(v, body):
        return True
    owner = v.owner
    return (
        isinstance(owner, SCALAR_OPS)
        and owner.parent_block() is body
        and all(_invariant(x, loop) for x in owner.operands)
    )


def _same_value(a: SSAValue, b: SSAValue, la: scf.ForOp, lb: scf.ForOp) -> bool:
    """`a` in loop `la` is the value `b` is in loop `lb` at the same iteration: one value
    defined outside both, the two induction variables, or the same scalar op of such."""
    if a is b:
        return not in_body(a, la.body.block) and not in_body(a, lb.body.block)
    if a is la.body.block.args[0] and b is lb.body.block.args[0]:
        return True
    oa, ob = a.owner, b.owner
    if not (isinstance(oa, SCALAR_OPS) and isinstance(ob, SCALAR_OPS)):
        return False
    if oa.parent_block() is not la.body.block or ob.parent_block() is not lb.body.block:
        return False
    return _same_op(oa, ob, la, lb)


def _same_op(oa: Operation, ob: Operation, la: scf.ForOp, lb: scf.ForOp) -> bool:
    if oa.name != ob.name or oa.properties != ob.properties or oa.attributes != ob.attributes:
        return False
    if [r.type for r in oa.results] != [r.type for r in ob.results]:
        return False
    if len(oa.operands) != len(ob.operands):
        return False
    return all(_same_value(x, y, la, lb) for x, y in zip(oa.operands, ob.operands, strict=True))


def _same_loads(first: aref.PutOp, other: aref.PutOp) -> str | None:
    """Why `other` does not load what `first` loads at the same iteration, or None."""
    la, lb = _loop_of(first), _loop_of(other)
    assert la is not None and lb is not None
    for a, b in zip(first.values, other.values, strict=True):
        oa, ob = a.owner, b.owner
        if not isinstance(oa, tile.LoadOp) or not isinstance(ob, tile.LoadOp):
            return "a payload that is not a tile.load"
        if oa.parent_block() is not la.body.block or ob.parent_block() is not lb.body.block:
            return "a load outside its loop's body"
        if len(list(b.uses)) != 1:
            return "a loaded tile the producer also uses otherwise"
        if not _same_op(oa, ob, la, lb):
            return "loads of other tiles or at other coordinates"
    return None


def rereads(create: aref.CreateOp) -> Rereads | str:
    """The chain of loops that move the same tiles through the aref again (a norm's
    statistics loop, then its output loop), or why there is none."""
    uses = [u.operation for u in create.result.uses]
    puts = [o for o in uses if isinstance(o, aref.PutOp)]
    gets = [o for o in uses if isinstance(o, aref.GetOp)]
    releases = [o for o in uses if isinstance(o, aref.ConsumedOp)]
    if len(puts) < 2:
        return "it is written by one loop"
    if not (len(puts) == len(gets) == len(releases)):
        return "its puts, gets and releases are not one each per loop"
    if any(o.when is not None for o in (*puts, *releases)):
        return "a transfer of it is predicated already"
    if any(r.deferred is not None for r in releases):
        return "its releases are deferred (an MMA reads its slots)"
    ordered: list[list] = []
    for ops in (puts, gets, releases):
        loops = [_loop_of(o) for o in ops]
        if any(lp is None for lp in loops) or len(set(loops)) != len(loops):
            return "a transfer of it is not in a loop of its own, directly in the body"
        block = loops[0].parent_block()  # type: ignore[union-attr]
        if block is None or any(lp.parent_block() is not block for lp in loops):  # type: ignore[union-attr]
            return "its loops are not one after the other in one block"
        order = list(block.ops)
        ordered.append(sorted(ops, key=lambda o: order.index(_loop_of(o))))
    puts, gets, releases = ordered
    if [_loop_of(g) for g in gets] != [_loop_of(r) for r in releases]:
        return "a slot is released in another loop than it is read"
    for loops in ([_loop_of(p) for p in puts], [_loop_of(g) for g in gets]):
        first = loops[0]
        assert first is not None
        if any((lp.lb, lp.ub, lp.step) != (first.lb, first.ub, first.step) for lp in loops):  # type: ignore[union-attr]
            return "its loops run over other bounds"
    local: list[SSAValue] = []
    produced: list[SSAValue] = []
    for k, (put, get, rel) in enumerate(zip(puts, gets, releases, strict=True)):
        found = [_iteration(o.index, _loop_of(o)) for o in (put, get, rel)]  # type: ignore[arg-type]
        if any(f is None for f in found):
            return "an index that is not the loop's iteration number (plus an offset)"
        if k == 0 and any(f[1] for f in found):  # type: ignore[index]
            return "its first loop's transfers do not start at 0"
        if get.index is not rel.index:
            return "a slot is released at another index than it is read"
        local.append(found[1][0])  # type: ignore[index]
        produced.append(found[0][0])  # type: ignore[index]
        if k and (why := _same_loads(puts[0], put)) is not None:
            return why
    return Rereads(tuple(puts), tuple(gets), tuple(releases), tuple(local), tuple(produced))
