"""Division by constants and constant folding in convert-to-ptx's integer arithmetic,
checked by evaluating the emitted PTX instructions on many 32-bit inputs."""

from __future__ import annotations

import random

import pytest

from tawac.backend_ptx import int_arith
from tawac.dialects import ptx

M = 0xFFFFFFFF


def _s(v: int) -> int:
    v &= M
    return v - (1 << 32) if v & 0x80000000 else v


class _Eval:
    """An emitter that evaluates each instruction as it is emitted."""

    def __init__(self):
        self.val: dict = {}
        self.count = 0
        self.kinds: set[type] = set()

    def imm(self, value: int, ty: str = "s32"):
        op = ptx.MovImmOp(ty, value)
        self.val[op.result] = value & M
        return op.result

    def input(self, value: int):
        op = ptx.SpecialRegOp("tid.x")
        self.val[op.result] = value & M
        return op.result

    def r(self, op):
        self.count += 1
        self.kinds.add(type(op))
        v = self.val
        if isinstance(op, ptx.SetpOp):
            a, b = v[op.operands[0]], v[op.operands[1]]
            assert op.cmp.data == "ge" and op.type.data == "u32"
            v[op.result] = int(a >= b)
            return op.result
        if isinstance(op, ptx.SelpOp):
            t, f, c = (v[x] for x in op.operands)
            v[op.result] = t if c else f
            return op.result
        a, b = v[op.lhs], v[op.rhs]
        ty = op.type.data
        mode = op.mode.data if op.mode is not None else None
        if isinstance(op, ptx.MulOp):
            out = (a * b) >> 32 if mode == "hi" else a * b
        elif isinstance(op, ptx.AddOp):
            out = a + b
        elif isinstance(op, ptx.SubOp):
            out = a - b
        elif isinstance(op, ptx.ShrOp):
            out = (_s(a) >> b) if ty == "s32" else a >> b
        elif isinstance(op, ptx.AndOp):
            out = a & b
        elif isinstance(op, ptx.DivOp):
            out = int(_s(a) / _s(b)) if ty == "s32" else a // b
        elif isinstance(op, ptx.RemOp):
            out = _s(a) - int(_s(a) / _s(b)) * _s(b) if ty == "s32" else a % b
        else:
            raise AssertionError(op.name)
        v[op.result] = out & M
        return op.result


_XS = [0, 1, 2, 3, 127, 128, 129, 0x7FFFFFFF, 0x80000000, 0x80000001, M - 1, M]
_XS += random.Random(0).sample(range(1 << 32), 300)


@pytest.mark.parametrize(
    "d", [1, 2, 3, 5, 6, 7, 10, 11, 100, 128, 641, 1000, 65537, 0x7FFFFFFF, 0x80000001, M]
)
def test_unsigned_division_by_constant(d):
    for x in _XS:
        e = _Eval()
        q = int_arith.binary(e, ptx.DivOp, "u32", e.input(x), e.imm(_s(d)))
        r = int_arith.binary(e, ptx.RemOp, "u32", e.input(x), e.imm(_s(d)))
        assert (e.val[q], e.val[r]) == (x // d, x % d), (x, d)


@pytest.mark.parametrize("d", [1, 2, 4, 64, 128, 3, 7, -2, -128])
def test_signed_division_by_constant(d):
    for x in _XS:
        e = _Eval()
        q = int_arith.binary(e, ptx.DivOp, "s32", e.input(x), e.imm(d))
        r = int_arith.binary(e, ptx.RemOp, "s32", e.input(x), e.imm(d))
        want_q = int(_s(x) / d)
        assert (_s(e.val[q]), _s(e.val[r])) == (want_q, _s(x) - want_q * d), (_s(x), d)


def test_no_division_instruction_for_constant_unsigned_divisors():
    """The point of the module: ptxas expands `div.u32` by a register into ~10 SASS
    instructions even when the register holds a constant."""
    for d in (3, 7, 128, 1000):
        e = _Eval()
        int_arith.binary(e, ptx.DivOp, "u32", e.input(12345), e.imm(d))
        int_arith.binary(e, ptx.RemOp, "u32", e.input(12345), e.imm(d))
        assert not e.kinds & {ptx.DivOp, ptx.RemOp}
        assert e.count <= 12


def test_constants_fold():
    e = _Eval()
    a, b = e.imm(7), e.imm(-3)
    cases = {
        ptx.AddOp: 4,
        ptx.SubOp: 10,
        ptx.MulOp: -21,
        ptx.DivOp: -2,
        ptx.RemOp: 1,
        ptx.MinOp: -3,
        ptx.MaxOp: 7,
    }
    for cls, want in cases.items():
        out = int_arith.binary(e, cls, "s32", a, b)
        assert int_arith.const_of(out) is not None
        assert _s(int_arith.const_of(out)) == want, cls.name
    assert e.count == 0
    x = e.input(5)
    assert int_arith.binary(e, ptx.AddOp, "s32", x, e.imm(0)) is x
    assert int_arith.binary(e, ptx.MulOp, "s32", e.imm(1), x) is x
    assert int_arith.const_of(int_arith.binary(e, ptx.SubOp, "s32", x, x)) == 0
    e.r = lambda op: op.result  # division by zero: emitted as is, not folded
    assert isinstance(int_arith.binary(e, ptx.DivOp, "s32", e.imm(1), e.imm(0)).owner, ptx.DivOp)
