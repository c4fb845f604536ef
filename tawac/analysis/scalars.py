"""Scalar index math: the ops that compute coordinates, loop bounds and slot indices.

Every partition may compute them (the producer duplicates the ones its addresses and
loop bounds need), a loop schedule recomputes them per stage instead of carrying them,
and the planner's loop schedules do not list them.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, SSAValue

from tawac.dialects import tile

#: The ops of scalar index math (integer arithmetic, comparisons, selects, program ids,
#: a program's share of a split tile, indices read from i32 tensors and tensor
#: dimensions).
SCALAR_OPS = (
    arith.ConstantOp,
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.DivUIOp,
    arith.DivSIOp,
    arith.CeilDivUIOp,
    arith.CeilDivSIOp,
    arith.FloorDivSIOp,
    arith.RemUIOp,
    arith.RemSIOp,
    arith.MinUIOp,
    arith.MinSIOp,
    arith.MaxUIOp,
    arith.MaxSIOp,
    arith.IndexCastOp,
    arith.CmpiOp,
    arith.SelectOp,
    tile.ProgramIdOp,
    tile.SplitInfoOp,
    tile.LoadIndexOp,
    tile.DimOp,
)


def constant_int(v: SSAValue) -> int | None:
    """The value of an integer `arith.constant`; None for any other value."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def multiple_of(v: SSAValue, m: int) -> bool:
    """Whether the index value `v` is a non-negative multiple of `m` by its definition: a
    constant, a product with such a factor (the other factors are program ids, sizes or
    loop values: non-negative), a sum of such terms, or the induction variable of an
    `scf.for` whose lower bound and step are such values (lb + i * step, i >= 0)."""
    c = constant_int(v)
    if c is not None:
        return c >= 0 and c % m == 0
    if isinstance(v, BlockArgument):
        loop = v.owner.parent_op()
        if not isinstance(loop, scf.ForOp) or v.index != 0:
            return False  # a kernel argument, an iteration argument
        return multiple_of(loop.lb, m) and multiple_of(loop.step, m)
    op = v.owner
    if isinstance(op, arith.MuliOp):
        return multiple_of(op.lhs, m) or multiple_of(op.rhs, m)
    if isinstance(op, arith.AddiOp):
        return multiple_of(op.lhs, m) and multiple_of(op.rhs, m)
    return False


def _div(a: int, b: int) -> int | None:
    """Signed division rounding toward zero (`arith.divsi`); None by zero."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


#: Integer arithmetic on Python ints, as `evaluate` runs it (None: division by zero).
_EVAL = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivUIOp: lambda a, b: a // b if b else None,
    arith.DivSIOp: _div,
    arith.CeilDivUIOp: lambda a, b: -(-a // b) if b else None,
    arith.CeilDivSIOp: lambda a, b: -(-a // b) if b else None,
    arith.MinSIOp: min,
    arith.MinUIOp: min,
    arith.MaxSIOp: max,
    arith.MaxUIOp: max,
}


def evaluate(v: SSAValue, args: dict[SSAValue, object], depth: int = 0) -> int | None:
    """The value of index value `v` at launch, computed from the kernel's arguments `args`
    (block argument -> a tensor with `.shape` or an integer): constants, `tile.dim`,
    integer arithmetic; None where it needs anything else (a program id, a loop value)
    or divides by zero."""
    c = constant_int(v)
    if c is not None:
        return c
    if v in args:
        a = args[v]
        return a if isinstance(a, int) else None
    op = v.owner
    if depth > 32:
        return None
    if isinstance(op, tile.DimOp):
        shape = getattr(args.get(op.source), "shape", None)
        return None if shape is None else int(shape[op.dim.data])
    fn = _EVAL.get(type(op))
    if fn is None:
        return None
    a, b = (evaluate(o, args, depth + 1) for o in op.operands)
    return None if a is None or b is None else fn(a, b)
