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

Output: `scf.if %some_false { tile.select ... } else { %x }`. The ops that move into the
`then` region are those of the select's own block that serve only it: the compare, where
it is in that block and used only by the select, and its iota and splat operands of that
block used only by the compare. What is defined elsewhere (a splat of the length or a
row iota hoisted before the loop, or the whole compare) stays where it is and is read
from inside. The scalar condition is built from the iota offsets and the splat index,
which come before the compare, so it is legal wherever the compare is (of a compare
before the loop it is loop-invariant). Where the select's one user is an elementwise op
whose other operands come before it (`qk * scale + tl.where(mask, 0, -1.0e6)`, Triton's
tutorial), the user moves into both branches (reading `%x` in the `else`), so the `if`
yields one tile instead of the mask's beside the user's operand. A select that is not
directly in a loop body (one already under an `scf.if`, as the examples write it, or as
this pass leaves it: a second run changes nothing) is left alone, as is any other
condition.

The rewrite is an xDSL `RewritePattern` on `tile.select` (`GuardMask`), applied to each
kernel by a `PatternRewriteWalker` (no dead-code elimination: nothing else changes).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

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


@dataclass(frozen=True)
class _Mask:
    """A compare of one of the module docstring's forms: `a pred n` (the iota `a`
    against the splat index `n`) or `a pred c` (two iotas along different dimensions),
    with the iota on the left."""

    pred: str
    a: _Iota
    n: SSAValue | None = None
    c: _Iota | None = None


def _mask(cmp: tile.CmpiOp) -> _Mask | None:
    """The form of `cmp` (module docstring), or None where it is of another form."""
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
        return _Mask(pred, a, n=n)
    c = _iota(rhs)
    if c is None or c.dim == a.dim:
        return None
    return _Mask(pred, a, c=c)


class _Builder:
    """Scalar index ops inserted by `rewriter` before one op."""

    def __init__(self, rewriter: PatternRewriter, before: Operation):
        self.rewriter = rewriter
        self.before = before

    def _add(self, op: Operation) -> SSAValue:
        self.rewriter.insert(op, InsertPoint.before(self.before))
        return op.results[0]

    def plus(self, v: SSAValue, c: int) -> SSAValue:
        if c == 0:
            return v
        k = self._add(arith.ConstantOp(IntegerAttr(c, IndexType())))
        return self._add(arith.AddiOp(v, k))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._add(arith.CmpiOp(a, b, pred))


def _some_false(mask: _Mask, b: _Builder) -> SSAValue:
    """The scalar i1 "some element of `mask` is false", built before `b.before`. Its
    inputs are the iota offsets and the splat index, which come before the compare and
    so before the select: the condition is legal wherever the compare is defined (a
    compare before the loop gives a loop-invariant condition)."""
    pred, a = mask.pred, mask.a
    if mask.n is not None:
        n = mask.n
        if pred == "slt":
            return b.cmp("sgt", b.plus(a.offset, a.extent), n)
        if pred == "sle":
            return b.cmp("sgt", b.plus(a.offset, a.extent - 1), n)
        return b.cmp("sle" if pred == "sgt" else "slt", a.offset, n)
    c = mask.c
    assert c is not None
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
    """The ops that move into the `then` region, in block order: the compare, where it is
    in the select's block and serves only the select, and its iota / splat operands of
    that block that serve only the compare. Ops of other blocks (hoisted before the
    loop) stay where they are; the `then` region reads them."""
    block = select.parent_block()
    assert block is not None
    if cmp.parent_block() is not block or not _only_for(cmp, {select}):
        return []
    ops: list[Operation] = [cmp]
    for v in (cmp.lhs, cmp.rhs):
        op = v.owner
        if (
            isinstance(op, tile.IotaOp | tile.SplatOp)
            and op.parent_block() is block
            and op not in ops
            and _only_for(op, {cmp})
        ):
            ops.append(op)
    order = {o: i for i, o in enumerate(block.ops)}
    return sorted(ops, key=lambda o: order[o])


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


@dataclass
class GuardMask(RewritePattern):
    """Put a `tile.select` directly in an `scf.for` body under an `scf.if` of its mask's
    "some element is false" (module docstring); `guarded` counts the selects guarded."""

    guarded: int = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, select: tile.SelectOp, rewriter: PatternRewriter) -> None:
        # a select under an scf.if (the examples', or one this pattern made) stays
        if not isinstance(select.parent_op(), scf.ForOp):
            return
        cmp = select.cond.owner
        if not isinstance(cmp, tile.CmpiOp):
            return
        mask = _mask(cmp)
        if mask is None:
            return
        some_false = _some_false(mask, _Builder(rewriter, select))
        then = Block()
        for op in _mask_ops(cmp, select):
            op.detach()
            then.add_op(op)
        inner = tile.SelectOp(select.cond, select.true_value, select.false_value)
        inner.location = select.location  # a later pass's error about it points there
        then.add_op(inner)
        self.guarded += 1
        user = _sunk_user(select)
        if user is None:
            then.add_op(scf.YieldOp(inner.result))
            other = Block([scf.YieldOp(select.true_value)])
            rewriter.replace(select, scf.IfOp(some_false, [select.result.type], [then], [other]))
            return
        # the select's one user goes into both branches: the `if` yields one tile, not the
        # mask's beside the user's other operand (the select's value is the true value in
        # the `else`, so the user computes there what it computed before)
        masked = user.clone({select.result: inner.result})
        then.add_ops([masked, scf.YieldOp(masked.results[0])])
        plain = user.clone({select.result: select.true_value})
        other = Block([plain, scf.YieldOp(plain.results[0])])
        branch = scf.IfOp(some_false, [user.results[0].type], [then], [other])
        rewriter.insert(branch, InsertPoint.before(select))
        rewriter.replace_all_uses_with(user.results[0], branch.results[0])
        rewriter.erase(user)
        rewriter.erase(select)


def guard_kernel(kernel: tile.KernelOp) -> int:
    """Guard every select directly in a loop body of `kernel`; the number guarded."""
    pattern = GuardMask()
    PatternRewriteWalker(pattern).rewrite_region(kernel.body)
    return pattern.guarded


@dataclass(frozen=True)
class GuardMasksPass(ModulePass):
    """Compute a loop's bounds and causal masks only where they are not all true."""

    name = "guard-masks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            guard_kernel(kernel)
