"""`canonicalize`: one spelling of the scalar index math, so that the passes after it match
one form of each index expression however the user wrote it.

The tile-level passes and analyses recognise index math by its form: a tile's rows at
`program_id(x) * BM` (the grid, `widen`, `group-heads`), a group at `h / G`. Users write
the same value other ways (`x << 7`, `(x * 64) * 2`, `128 * x`, a constant as `120 + 8`),
and a fresh copy of it per use. This pass rewrites integer scalar math (index and
integer types, not tiles) to one form, to a fixed point:

- an op of integer constants is folded (`arith.addi`, `subi`, `muli`, `shli`, and
  `divsi`/`divui`/`remsi`/`remui`/`ceildivsi`/`ceildivui`/`floordivsi` by a non-zero
  constant, `minsi`/`maxsi`/`minui`/`maxui` of non-negative constants) where the result
  fits the type;
- `x << c` is `x * 2^c`;
- a commutative op (`addi`, `muli`, `andi`, `ori`, `xori`, min, max) with a constant on
  the left has it on the right;
- `(x * a) * b` is `x * (a b)` and `(x + a) + b` is `x + (a + b)` (constants a, b);
- `x + 0`, `x - 0`, `x * 1`, `x / 1` are x;

then identical pure scalar ops are merged (one value per distinct index expression, in
the block that first computes it and the blocks nested in it) and unused ones dropped.
Nothing about tiles changes (two equal tile constants stay two values), nor any
floating-point math.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import is_side_effect_free

from tawac.analysis.scalars import constant_int
from tawac.dialects import tile


def _floordiv(a: int, b: int) -> int:
    return a // b


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _truncrem(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


#: Integer ops folded when both operands are constants: op -> (value, needs b != 0,
#: needs non-negative operands).
_FOLD = {
    arith.AddiOp: (lambda a, b: a + b, False, False),
    arith.SubiOp: (lambda a, b: a - b, False, False),
    arith.MuliOp: (lambda a, b: a * b, False, False),
    arith.ShLIOp: (lambda a, b: a << b if 0 <= b < 63 else None, False, False),
    arith.DivSIOp: (_truncdiv, True, False),
    arith.DivUIOp: (_floordiv, True, True),
    arith.RemSIOp: (_truncrem, True, False),
    arith.RemUIOp: (lambda a, b: a % b, True, True),
    arith.CeilDivSIOp: (_ceildiv, True, False),
    arith.CeilDivUIOp: (_ceildiv, True, True),
    arith.FloorDivSIOp: (_floordiv, True, False),
    arith.MinSIOp: (min, False, False),
    arith.MaxSIOp: (max, False, False),
    arith.MinUIOp: (min, False, True),
    arith.MaxUIOp: (max, False, True),
}
#: The commutative integer ops (their constant operand goes on the right).
COMMUTATIVE_INT = (
    arith.AddiOp,
    arith.MuliOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.MinSIOp,
    arith.MaxSIOp,
    arith.MinUIOp,
    arith.MaxUIOp,
)
#: x op c is x for these constants c.
_IDENTITY = {
    arith.AddiOp: 0,
    arith.SubiOp: 0,
    arith.MuliOp: 1,
    arith.DivSIOp: 1,
    arith.DivUIOp: 1,
}


def _integer(v: SSAValue) -> bool:
    """An index or integer scalar wider than i1 (a tile is a tensor: never)."""
    t = v.type
    return isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data > 1)


def _fits(value: int, v: SSAValue) -> bool:
    t = v.type
    bits = 64 if isinstance(t, IndexType) else t.width.data  # type: ignore[union-attr]
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


class FoldConstants(RewritePattern):
    """An integer op of two constants is a constant."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        rule = _FOLD.get(type(op))
        if rule is None or len(op.results) != 1 or not _integer(op.results[0]):
            return
        a, b = (constant_int(v) for v in op.operands)
        if a is None or b is None:
            return
        fn, nonzero, nonnegative = rule
        if (nonzero and b == 0) or (nonnegative and (a < 0 or b < 0)):
            return
        value = fn(a, b)
        if value is None or not _fits(value, op.results[0]):
            return
        c = arith.ConstantOp(IntegerAttr(value, op.results[0].type))
        rewriter.replace(op, c)


class ShiftToMultiply(RewritePattern):
    """`x << c` is `x * 2^c`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, arith.ShLIOp) or not _integer(op.result):
            return
        c = constant_int(op.rhs)
        if c is None or not 0 <= c < 62 or constant_int(op.lhs) is not None:
            return
        k = arith.ConstantOp(IntegerAttr(1 << c, op.result.type))
        rewriter.replace(op, [k, arith.MuliOp(op.lhs, k.result)])


class ConstantsRight(RewritePattern):
    """A commutative op's constant operand goes on the right."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, COMMUTATIVE_INT) or not _integer(op.results[0]):
            return
        lhs, rhs = op.operands
        if constant_int(lhs) is None or constant_int(rhs) is not None:
            return
        rewriter.replace(op, type(op)(rhs, lhs))


class Reassociate(RewritePattern):
    """`(x * a) * b` is `x * (a b)`, `(x + a) + b` is `x + (a + b)`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, arith.MuliOp | arith.AddiOp) or not _integer(op.result):
            return
        b = constant_int(op.rhs)
        inner = op.lhs.owner
        if b is None or type(inner) is not type(op):
            return
        assert isinstance(inner, arith.MuliOp | arith.AddiOp)
        a = constant_int(inner.rhs)
        if a is None or constant_int(inner.lhs) is not None:
            return
        value = a * b if isinstance(op, arith.MuliOp) else a + b
        if not _fits(value, op.result):
            return
        c = arith.ConstantOp(IntegerAttr(value, op.result.type))
        rewriter.replace(op, [c, type(op)(inner.lhs, c.result)])


class DropIdentity(RewritePattern):
    """`x + 0`, `x - 0`, `x * 1`, `x / 1` are x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        unit = _IDENTITY.get(type(op))
        if unit is None or not _integer(op.results[0]):
            return
        if constant_int(op.operands[1]) != unit:
            return
        if op.operands[0].type != op.results[0].type:
            return
        rewriter.replace(op, [], [op.operands[0]])


PATTERNS = (FoldConstants(), ShiftToMultiply(), ConstantsRight(), Reassociate(), DropIdentity())


def _scalar_pure(op: Operation) -> bool:
    return (
        not op.regions
        and bool(op.results)
        and not any(isinstance(r.type, TensorType) for r in op.results)
        and is_side_effect_free(op)
    )


def _key(op: Operation) -> tuple:
    return (
        op.name,
        tuple(op.operands),
        tuple(sorted(op.properties.items(), key=lambda kv: kv[0])),
        tuple(sorted(op.attributes.items(), key=lambda kv: kv[0])),
        tuple(r.type for r in op.results),
    )


def merge_scalars(block: Block, seen: dict | None = None) -> None:
    """Merges identical pure scalar ops: an op equal to one before it in `block` or in a
    block it is nested in takes that op's results; unused pure scalar ops are dropped."""
    seen = dict(seen or {})
    for op in list(block.ops):
        if _scalar_pure(op):
            key = _key(op)
            first = seen.get(key)
            if first is not None:
                for old, new in zip(op.results, first.results, strict=True):
                    old.replace_all_uses_with(new)
                op.detach()
                op.erase()
                continue
            seen[key] = op
        for region in op.regions:
            for inner in region.blocks:
                merge_scalars(inner, seen)
    for op in reversed(list(block.ops)):
        if _scalar_pure(op) and not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def canonicalize_kernel(kernel: tile.KernelOp) -> None:
    """Rewrites `kernel`'s integer scalar math to its one form (module docstring)."""
    PatternRewriteWalker(GreedyRewritePatternApplier(list(PATTERNS))).rewrite_region(kernel.body)
    merge_scalars(kernel.body.block)


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    """One spelling of the scalar index math (module docstring)."""

    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            canonicalize_kernel(kernel)
