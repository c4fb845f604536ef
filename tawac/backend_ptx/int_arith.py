"""32-bit integer arithmetic for `convert-to-ptx`: constant folding and division by
constants.

Index math (slot and phase of a ring, tile coordinates, trip counts) divides by values
known at compile time: the ring depth, a block size, a grid dimension of 1.  ptxas keeps
`div.u32 d, a, r` with `r` a register holding a constant as a full software division
(I2F, MUFU.RCP, F2I and a correction, about 10 instructions), so it is folded here:

- operands that are both constants give a constant (`mov` of the result);
- x + 0, x - 0, x * 1, x / 1 are x; x % 1 is 0;
- unsigned division by 2^k is a shift and the remainder a mask; signed division by 2^k
  rounds toward zero with the usual sign correction (PTX ISA 9.7.1.6 div truncates);
- unsigned division by another constant d is a multiply-high by a magic number
  (Granlund and Montgomery, "Division by invariant integers using multiplication",
  1994): q = mulhi(x, m) >> s when m < 2^32 and m * d - 2^(32+s) <= 2^s, else the
  33-bit magic form q = (((x - t) >> 1) + t) >> (s - 1) with t = mulhi(x, m - 2^32).
  Both are exact for every 32-bit x.  Remainders are x - q * d.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import SSAValue

from tawac.dialects import ptx


class Emitter(Protocol):
    def r(self, op: ptx.PtxInstruction) -> SSAValue: ...
    def imm(self, value: int, ty: str = "s32") -> SSAValue: ...


_MASK = 0xFFFFFFFF


def const_of(x: SSAValue) -> int | None:
    """The value of a register that holds an integer constant, as unsigned 32 bits."""
    op = x.owner
    if isinstance(op, ptx.MovImmOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data & _MASK
    return None


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 32) if v & 0x80000000 else v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_FOLD: dict[str, Callable[[int, int, bool], int | None]] = {
    "add": lambda a, b, s: a + b,
    "sub": lambda a, b, s: a - b,
    "mul": lambda a, b, s: a * b,
    "div": lambda a, b, s: (
        None if b == 0 else (_trunc_div(_signed(a), _signed(b)) if s else a // b)
    ),
    "rem": lambda a, b, s: (
        None
        if b == 0
        else (_signed(a) - _trunc_div(_signed(a), _signed(b)) * _signed(b) if s else a % b)
    ),
    "min": lambda a, b, s: min(_signed(a), _signed(b)) if s else min(a, b),
    "max": lambda a, b, s: max(_signed(a), _signed(b)) if s else max(a, b),
    "and": lambda a, b, s: a & b,
    "or": lambda a, b, s: a | b,
    "xor": lambda a, b, s: a ^ b,
    "shl": lambda a, b, s: a << b if b < 32 else 0,
    "shr": lambda a, b, s: (_signed(a) >> min(b, 31)) if s else (a >> b if b < 32 else 0),
}


def binary(
    k: Emitter, cls: type[ptx.PtxInstruction], ty: str, a: SSAValue, b: SSAValue
) -> SSAValue:
    """`cls.OPCODE.ty a, b` on 32-bit integer registers (`mul` meaning `mul.lo`), folded
    or strength-reduced where an operand is a constant."""
    opcode = cls.OPCODE  # type: ignore[attr-defined]
    ca, cb = const_of(a), const_of(b)
    signed = ty == "s32"
    if ca is not None and cb is not None and opcode in _FOLD:
        v = _FOLD[opcode](ca, cb, signed)
        if v is not None:
            return k.imm(_signed(v))
    if cb == 0 and opcode in ("add", "sub", "or", "xor", "shl", "shr"):
        return a
    if ca == 0 and opcode in ("add", "or", "xor"):
        return b
    if opcode == "sub" and a is b:
        return k.imm(0)
    if opcode == "mul" and (cb == 1 or ca == 1):
        return a if cb == 1 else b
    if opcode == "div" and cb is not None and cb != 0:
        return div_const(k, a, cb, signed)
    if opcode == "rem" and cb is not None and cb != 0:
        return rem_const(k, a, cb, signed)
    if cls is ptx.MulOp:
        return k.r(ptx.MulOp(ty, a, b, mode="lo"))
    return k.r(cls(ty, a, b))


def _log2(d: int) -> int | None:
    return d.bit_length() - 1 if d > 0 and d & (d - 1) == 0 else None


def div_const(k: Emitter, x: SSAValue, d: int, signed: bool) -> SSAValue:
    """x / d for a constant d != 0 (PTX `div` semantics: truncation)."""
    if signed:
        sd = _signed(d)
        if sd == 1:
            return x
        p = _log2(sd)
        if p is None:
            return k.r(ptx.DivOp("s32", x, k.imm(sd)))
        # round toward zero: add 2^p - 1 to negative dividends before the shift
        sign = k.r(ptx.ShrOp("s32", x, k.imm(31)))
        bias = k.r(ptx.ShrOp("u32", sign, k.imm(32 - p)))
        return k.r(ptx.ShrOp("s32", k.r(ptx.AddOp("s32", x, bias)), k.imm(p)))
    if d == 1:
        return x
    p = _log2(d)
    if p is not None:
        return k.r(ptx.ShrOp("u32", x, k.imm(p)))
    if d > 0x80000000:
        # the quotient is 0 or 1
        ok = k.r(ptx.SetpOp("ge", "u32", x, k.imm(_signed(d))))
        return k.r(ptx.SelpOp("s32", k.imm(1), k.imm(0), ok))
    s = (d - 1).bit_length()  # ceil(log2 d)
    for shift in range(s + 1):
        m = -(-(1 << (32 + shift)) // d)
        if m <= _MASK and m * d - (1 << (32 + shift)) <= (1 << shift):
            hi = k.r(ptx.MulOp("u32", x, k.imm(_signed(m)), mode="hi"))
            return hi if shift == 0 else k.r(ptx.ShrOp("u32", hi, k.imm(shift)))
    m = -(-(1 << (32 + s)) // d) - (1 << 32)
    t = k.r(ptx.MulOp("u32", x, k.imm(_signed(m)), mode="hi"))
    half = k.r(ptx.ShrOp("u32", k.r(ptx.SubOp("s32", x, t)), k.imm(1)))
    return k.r(ptx.ShrOp("u32", k.r(ptx.AddOp("s32", half, t)), k.imm(s - 1)))


def rem_const(k: Emitter, x: SSAValue, d: int, signed: bool) -> SSAValue:
    """x % d for a constant d != 0 (the sign of the dividend, as PTX `rem`)."""
    if not signed and _log2(d) is not None:
        return k.r(ptx.AndOp("b32", x, k.imm(_signed(d - 1))))
    if signed and _log2(_signed(d)) is None:
        return k.r(ptx.RemOp("s32", x, k.imm(_signed(d))))
    q = div_const(k, x, d, signed)
    return k.r(ptx.SubOp("s32", x, k.r(ptx.MulOp("s32", q, k.imm(_signed(d)), mode="lo"))))
