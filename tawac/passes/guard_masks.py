"""`guard-masks`: a mask that is all true on most iterations of a loop is computed only
on the others.

A Triton program masks every key block against the sequence length
(`tl.where(offs_n < seqlen, qk, -inf)`) and every block against the causal diagonal;
only the last block (and the blocks on the diagonal) have a false element. Per element
and iteration the mask costs an integer compare and a select on the softmax's critical
path. This pass puts such a select under an `scf.if` of a scalar condition, "some
element is false", as `examples/attention.mlir` writes its ragged block by hand: the
other iterations pass the value through.

Input: a `tile.select %c, %x, %y` directly in the body of an `scf.for` whose condition
is a `tile.cmpi` (signed predicate) of

- a `tile.iota d, %off` (values off .. off + e - 1 along d) and a `tile.splat %n` of an
  index: `off + e > n` for `slt` (some element past n), `off + e - 1 > n` for `sle`,
  `off <= n` for `sgt`, `off < n` for `sge` (the splat on the left: the mirrored
  predicate);
- two `tile.iota`s along different dimensions (the causal mask `rows >= cols`): `sge`
  is all true where the smallest row is at least the largest column,
  `offA >= offB + eB - 1`, and likewise for `sgt`, `sle`, `slt`.

Output: `scf.if %some_false { tile.select ... } else { %x }`; the compare, and the iota
and splat ops used only by it, move into the `then` region. Where the select's one user
is an elementwise op whose other operands come before it (`qk * scale + tl.where(mask,
0, -1.0e6)`, Triton's tutorial), the user moves into both branches (reading `%x` in the
`else`), so the `if` yields one tile instead of the mask's beside the user's operand.
A select that is not directly in a loop body (one already under an `scf.if`, as the
examples write it) is left alone, as is any other condition.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.dialects import tile

#: The predicate with its operands swapped.
_MIRROR = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle"}


@dataclass(frozen=True)
class _Iota:
    dim: int
    offset: SSAValue
    extent: int


def _iota(v: SSAValue) -> _Iota | None:
    op = v.owner
    if not isinstance(op, tile.IotaOp):
        return None
    ty = v.type
    assert isinstance(ty, TensorType)
    return _Iota(op.dim.data, op.offset, ty.get_shape()[op.dim.data])


def _splat_index(v: SSAValue) -> SSAValue | None:
    op = v.owner
    if not isinstance(op, tile.SplatOp) or not isinstance(op.value.type, IndexType):
        return None
    return op.value


class _Builder:
    """Scalar index ops inserted before one op."""

    def __init__(self, before: Operation):
        self.before = before

    def _add(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(self.before))
        return op.results[0]

    def plus(self, v: SSAValue, c: int) -> SSAValue:
        if c == 0:
            return v
        k = self._add(arith.ConstantOp(IntegerAttr(c, IndexType())))
        return self._add(arith.AddiOp(v, k))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._add(arith.CmpiOp(a, b, pred))


def _some_false(cmp: tile.CmpiOp, b: _Builder) -> SSAValue | None:
    """The scalar i1 "some element of `cmp` is false", built before `b.before`, or None
    where the compare is of another form (module docstring)."""
    pred = cmp.predicate.data
    if pred not in _MIRROR:
        return None
    lhs, rhs = cmp.lhs, cmp.rhs
    if _iota(lhs) is None:
        lhs, rhs, pred = rhs, lhs, _MIRROR[pred]
    a = _iota(lhs)
    if a is None:
        return None
    n = _splat_index(rhs)
    if n is not None:
        if pred == "slt":
            return b.cmp("sgt", b.plus(a.offset, a.extent), n)
        if pred == "sle":
            return b.cmp("sgt", b.plus(a.offset, a.extent - 1), n)
        return b.cmp("sle" if pred == "sgt" else "slt", a.offset, n)
    c = _iota(rhs)
    if c is None or c.dim == a.dim:
        return None
    if pred == "sge":
        return b.cmp("slt", a.offset, b.plus(c.offset, c.extent - 1))
    if pred == "sgt":
        return b.cmp("slt", a.offset, b.plus(c.offset, c.extent))
    if pred == "sle":
        return b.cmp("sgt", b.plus(a.offset, a.extent - 1), c.offset)
    return b.cmp("sge", b.plus(a.offset, a.extent - 1), c.offset)


def _only_for(op: Operation, users: set[Operation]) -> bool:
    return all(u.operation in users for r in op.results for u in r.uses)


def _mask_ops(cmp: tile.CmpiOp, select: tile.SelectOp) -> list[Operation]:
    """The compare and its iota / splat operands that serve only the select, in block
    order (they move into the `then` region)."""
    if not _only_for(cmp, {select}):
        return []
    ops: list[Operation] = [cmp]
    for v in (cmp.lhs, cmp.rhs):
        op = v.owner
        if isinstance(op, tile.IotaOp | tile.SplatOp) and op not in ops and _only_for(op, {cmp}):
            ops.append(op)
    block = select.parent_block()
    assert block is not None
    order = {o: i for i, o in enumerate(block.ops)}
    return sorted(ops, key=lambda o: order[o])


def guard(select: tile.SelectOp) -> bool:
    """Put `select` under an `scf.if` of its mask's "some element is false" (module
    docstring); False where the mask is of another form."""
    cmp = select.cond.owner
    if not isinstance(cmp, tile.CmpiOp):
        return False
    some_false = _some_false(cmp, _Builder(select))
    if some_false is None:
        return False
    moved = _mask_ops(cmp, select)
    then = Block()
    for op in moved:
        op.detach()
        then.add_op(op)
    inner = tile.SelectOp(select.cond, select.true_value, select.false_value)
    then.add_op(inner)
    user = _sunk_user(select)
    if user is None:
        then.add_op(scf.YieldOp(inner.result))
        other = Block([scf.YieldOp(select.true_value)])
        branch = scf.IfOp(some_false, [select.result.type], [then], [other])
        Rewriter.replace_op(select, branch)
        return True
    # the select's one user goes into both branches: the `if` yields one tile, not the
    # mask's beside the user's other operand (the select's value is the true value in
    # the `else`, so the user computes there what it computed before)
    masked = user.clone({select.result: inner.result})
    then.add_ops([masked, scf.YieldOp(masked.results[0])])
    plain = user.clone({select.result: select.true_value})
    other = Block([plain, scf.YieldOp(plain.results[0])])
    branch = scf.IfOp(some_false, [user.results[0].type], [then], [other])
    Rewriter.insert_op(branch, InsertPoint.before(select))
    user.results[0].replace_all_uses_with(branch.results[0])
    Rewriter.erase_op(user)
    Rewriter.erase_op(select)
    return True


#: Elementwise ops a guarded select's one user may be (it moves into both branches).
_SINKABLE = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
)


def _sunk_user(select: tile.SelectOp) -> Operation | None:
    """The select's one user, when it is an elementwise op of its block whose other
    operands are defined before the select (the tutorial's `qk * scale +
    tl.where(mask, 0, -1.0e6)`), else None."""
    uses = list(select.result.uses)
    if len(uses) != 1:
        return None
    user = uses[0].operation
    if not isinstance(user, _SINKABLE) or user.parent_block() is not select.parent_block():
        return None
    block = select.parent_block()
    assert block is not None
    order = {o: i for i, o in enumerate(block.ops)}
    for v in user.operands:
        if v is select.result:
            continue
        owner = v.owner
        if isinstance(owner, Operation) and order.get(owner, -1) > order[select]:
            return None
    return user


def guard_kernel(kernel: tile.KernelOp) -> int:
    """Guard every select directly in a loop body of `kernel`; the number guarded."""
    selects = [
        o
        for o in kernel.walk()
        if isinstance(o, tile.SelectOp) and isinstance(o.parent_op(), scf.ForOp)
    ]
    return sum(guard(s) for s in selects)


@dataclass(frozen=True)
class GuardMasksPass(ModulePass):
    """Compute a loop's bounds and causal masks only where they are not all true."""

    name = "guard-masks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            guard_kernel(kernel)
