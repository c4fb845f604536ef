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


class _Unsupported(Exception):
    """A value `_Source` leaves to `_eval`: one `_eval` raises an error at whatever the
    sizes (an op no program order computes, a value computed from itself, an iteration
    argument the reader cannot expand), or a symbol that is no value."""


class _Source:
    """The kernel's integer code as straight-line Python that computes what `_eval` does,
    for the grid check to run at many points instead of walking the SSA graph at each:
    each value once, after its operands, in `_eval`'s order, so that a division checks its
    divisor (raising `_eval`'s `PointerError`) where `_eval` would. `params`: the values
    given (`_eval`'s `env`) -> their Python names; `varying`: those of them that change
    from point to point. A value computed from the others only goes to `fixed` (computed
    once), any other to `body`; `names`: the objects the lines refer to (the ops their
    errors name). `_Unsupported` where `_eval` raises whatever the values."""

    def __init__(self, params: dict[SSAValue, str], varying: set[SSAValue], reader=None):
        self.params = params
        self.varying = varying
        self.reader = reader
        self.memo: dict[SSAValue, tuple[str, bool] | None] = {}
        self.fixed: list[str] = []
        self.body: list[str] = []
        self.names: dict[str, object] = {"PointerError": PointerError}

    def poly(self, p: Poly) -> tuple[str, bool]:
        """`_poly_value` of `p`: an expression and whether it varies."""
        terms, varies = [], False
        for m, c in p.terms.items():
            if type(c) is not int:
                raise _Unsupported
            factors = [f"({c})"]
            for s in m:
                x, var = self.value(s)
                factors.append(x)
                varies |= var
            terms.append(" * ".join(factors))
        return self._line(" + ".join(terms) or "0", varies)

    def value(self, v: SSAValue) -> tuple[str, bool]:
        """`_eval` of `v`: a Python name or literal and whether it varies."""
        if not isinstance(v, SSAValue):
            raise _Unsupported
        if v in self.params:
            return self.params[v], v in self.varying
        if v in self.memo:
            if self.memo[v] is None:
                raise _Unsupported
            return self.memo[v]
        self.memo[v] = None
        out = self._value(v)
        self.memo[v] = out
        return out

    def _value(self, v: SSAValue) -> tuple[str, bool]:
        op = v.owner
        if self.reader is not None and _is_iter_arg(v):
            try:
                p = self.reader.int_poly(v)
            except Exception:
                raise _Unsupported from None
            return self.poly(p)
        if isinstance(op, tt.ExtSIOp | tt.ExtUIOp | tt.TruncIOp):
            return self.value(op.src)
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            data = op.value.value.data
            if type(data) is not int:
                raise _Unsupported
            return f"({data})", False
        kinds = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.RemSIOp)
        if not isinstance(op, (*kinds, arith.MinSIOp, arith.MaxSIOp)):
            raise _Unsupported
        (a, va), (b, vb) = self.value(op.lhs), self.value(op.rhs)
        varies = va or vb
        if isinstance(op, arith.MinSIOp | arith.MaxSIOp):
            cmp = "<=" if isinstance(op, arith.MinSIOp) else ">="
            return self._line(f"{a} if {a} {cmp} {b} else {b}", varies)
        if isinstance(op, arith.DivSIOp | arith.RemSIOp):
            what = "divides by" if isinstance(op, arith.DivSIOp) else "takes a remainder by"
            name = f"o{len(self.names)}"
            self.names[name] = op
            message = f"a program order that {what} zero"
            self._emit(f"if {b} == 0: raise PointerError({message!r}, {name})", varies)
            if isinstance(op, arith.DivSIOp):
                return self._line(f"int({a} / {b})", varies)  # rounds toward zero, as divsi
            return self._line(f"{a} - {b} * int({a} / {b})", varies)
        sign = "+" if isinstance(op, arith.AddiOp) else "-" if isinstance(op, arith.SubiOp) else "*"
        return self._line(f"{a} {sign} {b}", varies)

    def _line(self, expr: str, varies: bool) -> tuple[str, bool]:
        name = f"v{len(self.fixed) + len(self.body)}"
        self._emit(f"{name} = {expr}", varies)
        return name, varies

    def _emit(self, line: str, varies: bool) -> None:
        (self.body if varies else self.fixed).append(line)


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


def _loop_indices(v: SSAValue) -> set[SSAValue]:
    """The induction variables of the loops inside a program (any `scf.for` but a
    persistent loop over tiles) a scalar is computed from: what a program walks, not
    which program it is."""

    def leaf(x: SSAValue) -> SSAValue | None:
        if not isinstance(x, BlockArgument) or x.index != 0:
            return None
        loop = x.owner.parent_op()
        return x if isinstance(loop, scf.ForOp) and _grid_stride(loop) is None else None

    return _sources(v, leaf)


def _arguments_of(v: SSAValue) -> set[BlockArgument]:
    """The kernel's integer arguments a scalar is computed from."""
    return _sources(v, lambda x: x if _is_arg(x) else None)


def _direct(qd: Poly) -> int | None:
    """The axis where `qd` is a program symbol itself."""
    (sym,) = _single_symbol(qd) or (None,)
    return _program_axis(sym) if sym is not None else None
