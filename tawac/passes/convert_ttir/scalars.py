"""The kernel's scalar integer code, as the plan reads it: its value at given sizes (the
grid check, `tawac.passes.convert_ttir.grid`), the program symbols (program ids, a
persistent loop's tile id) and the integer arguments a scalar is computed from, and the
origins of the shapes `x % S`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from tawac.analysis.pointers import PointerError, Poly, Range
from tawac.analysis.scalars import constant_int
from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _name, _op


def _eval(v: SSAValue, env: Mapping[SSAValue, int], memo: dict, reader=None) -> int:
    """The integer value of a scalar of the kernel's integer code at `env` (a loop's
    integer iteration argument through its polynomial, `reader.int_poly`)."""
    if v in env:
        return env[v]
    if v in memo:
        if memo[v] is None:  # only text that uses a value before defining it
            raise PointerError("a program order computed from itself", _op(v))
        return memo[v]
    memo[v] = None
    op = v.owner
    if reader is not None and _is_iter_arg(v):
        try:
            out = _poly_value(reader.int_poly(v), env, memo, reader)
        except PointerError as e:
            raise PointerError(e.message, e.op) from None
        memo[v] = out
        return out
    if isinstance(op, tt.ExtSIOp | tt.ExtUIOp | tt.TruncIOp):
        out = _eval(op.src, env, memo, reader)
    elif isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        out = op.value.value.data
    elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.DivSIOp):
        a, b = _eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader)
        if isinstance(op, arith.AddiOp):
            out = a + b
        elif isinstance(op, arith.SubiOp):
            out = a - b
        elif isinstance(op, arith.MuliOp):
            out = a * b
        elif b == 0:
            raise PointerError("a program order that divides by zero", op)
        else:
            out = int(a / b)  # rounds toward zero, as divsi
    elif isinstance(op, arith.RemSIOp):
        a, b = _eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader)
        if b == 0:
            raise PointerError("a program order that takes a remainder by zero", op)
        out = a - b * int(a / b)
    elif isinstance(op, arith.MinSIOp):
        out = min(_eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader))
    elif isinstance(op, arith.MaxSIOp):
        out = max(_eval(op.lhs, env, memo, reader), _eval(op.rhs, env, memo, reader))
    else:
        raise PointerError(f"a program order computed by {_name(op)}", _op(v))
    memo[v] = out
    return out


def _is_iter_arg(v: SSAValue) -> bool:
    return (
        isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), scf.ForOp) and v.index > 0
    )


def _grid_stride(loop: Operation) -> int | None:
    """The program-id axis of a persistent loop over tiles, `for t in range(pid, T, S)`
    in the kernel's body (S a constant or `tl.num_programs`): its `t` takes each tile
    id once over the programs when the grid has S programs, as Triton's persistent
    kernels launch; tawac runs the body once per tile id instead (its own grid, its own
    persistence). None for any other loop."""
    if not isinstance(loop, scf.ForOp) or not isinstance(loop.parent_op(), tt.FuncOp):
        return None
    lb = loop.lb.owner
    if not isinstance(lb, tt.GetProgramIdOp):
        return None
    step = loop.step.owner
    const = isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr)
    if const and step.value.value.data > 0:
        return lb.axis_index
    if isinstance(step, tt.GetNumProgramsOp) and step.axis_index == lb.axis_index:
        return lb.axis_index
    return None


def _program_axis(v: SSAValue) -> int | None:
    """The axis of a program symbol: a program id, or the tile id of a persistent loop."""
    if isinstance(v.owner, tt.GetProgramIdOp):
        return v.owner.axis_index
    if isinstance(v, BlockArgument) and v.index == 0:
        return _grid_stride(v.owner.parent_op())
    return None


def _poly_value(p: Poly, env: Mapping[SSAValue, int], memo: dict, reader=None) -> int:
    total = 0
    for m, c in p.terms.items():
        term = c
        for s in m:
            term *= _eval(s, env, memo, reader)
        total += term
    return total


def _single_symbol(p: Poly) -> list[SSAValue]:
    if len(p.terms) == 1:
        ((m, c),) = p.terms.items()
        if c == 1 and len(m) == 1 and not isinstance(m[0], Range):
            return [m[0]]
    return []


def _is_arg(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.owner.parent_op(), tt.FuncOp)


def _rem_size(origin: Poly) -> BlockArgument | None:
    """`S` where the origin is `x % S` of a scalar, `S` a kernel argument (the head of
    `off_hz % H`): the dimension has `S` blocks."""
    (sym,) = _single_symbol(origin) or (None,)
    op = sym.owner if sym is not None else None
    if isinstance(op, arith.RemSIOp) and _is_arg(op.rhs):
        return op.rhs
    return None


def _rem_count(origin: Poly) -> int | None:
    """`C` where the origin is `x % C` of a scalar, `C` a positive constant (the head of
    `off_hz % H` with H a constexpr): the dimension has `C` blocks."""
    (sym,) = _single_symbol(origin) or (None,)
    op = sym.owner if sym is not None else None
    if not isinstance(op, arith.RemSIOp | arith.RemUIOp):
        return None
    value = constant_int(op.rhs)
    return value if value is not None and value > 0 else None


def _pid_axes(p: Poly) -> set[int]:
    """The program-id axes a block index depends on (through the scalar code)."""
    found: set[int] = set()
    for m in p.terms:
        for s in m:
            if not isinstance(s, Range):
                found |= {a for v in _program_symbols(s) if (a := _program_axis(v)) is not None}
    return found


def _sources(v: SSAValue, leaf: Callable[[SSAValue], SSAValue | None]) -> set[SSAValue]:
    """What `leaf` picks out of the kernel's integer code `v` is computed from: walking
    operands, and from a loop's iteration argument to its initial value."""
    out: set[SSAValue] = set()
    work, seen = [v], set()
    while work and len(seen) < 10000:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        found = leaf(x)
        if found is not None:
            out.add(found)
        elif _is_iter_arg(x):
            work.append(x.owner.parent_op().iter_args[x.index - 1])
        elif isinstance(x.owner, Operation):
            work.extend(x.owner.operands)
    return out


def _program_symbols(v: SSAValue) -> set[SSAValue]:
    """The program symbols (`_program_axis`) a scalar is computed from; an iteration
    argument of a persistent loop stands for its tile id (the loop's `t`)."""

    def leaf(x: SSAValue) -> SSAValue | None:
        if _program_axis(x) is not None:
            return x
        loop = x.owner.parent_op() if _is_iter_arg(x) else None
        return (
            loop.body.block.args[0] if loop is not None and _grid_stride(loop) is not None else None
        )

    return _sources(v, leaf)


def _arguments_of(v: SSAValue) -> set[BlockArgument]:
    """The kernel's integer arguments a scalar is computed from."""
    return _sources(v, lambda x: x if _is_arg(x) else None)


def _direct(qd: Poly) -> int | None:
    """The axis where `qd` is a program symbol itself."""
    (sym,) = _single_symbol(qd) or (None,)
    return _program_axis(sym) if sym is not None else None
