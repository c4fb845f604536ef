"""Structured control flow: `scf.for` and `scf.if` to labels and branches.

Loop-carried values and `if` results live in registers written with `ptx.assign`; 16-bit
tiles are carried as packed pairs, and an `if` result yielded unchanged from before the
`if` keeps that value's registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Block, SSAValue

from tawac.backend_ptx.lowering.mma import pack_pair
from tawac.backend_ptx.lowering.state import Frag, KernelLowering, handles, mov_type, reg_kind
from tawac.diagnostics import CompileError
from tawac.dialects import ptx


@handles(scf.ForOp)
def _for(k: KernelLowering, op: scf.ForOp) -> None:
    lb, ub, step = k.scalar(op.lb), k.scalar(op.ub), k.scalar(op.step)
    iv = k.r(ptx.MovOp("b32", lb))
    carried: list[object] = []
    for init in op.iter_args:
        x = k.vals.get(init)
        if isinstance(x, Frag) and _packs(x):
            carried.append(_Packed(x, [k.r(ptx.MovOp("b32", r)) for r in _pairs(k, x)]))
        elif isinstance(x, Frag):
            carried.append(k.materialize(x))
        elif isinstance(x, SSAValue):
            carried.append(k.r(ptx.MovOp(mov_type(reg_kind(x)), x)))
        else:
            raise CompileError("convert-to-ptx: unsupported loop-carried value", op)
    top, end = k.label("loop"), k.label("loop_end")
    k.emit(ptx.BraOp(end, k.r(ptx.SetpOp("ge", "s32", iv, ub)), uni=True))
    k.emit(ptx.LabelOp(top))
    body = op.body.block
    k.vals[body.args[0]] = iv
    with k.scope():
        for arg, c in zip(body.args[1:], carried, strict=True):
            k.vals[arg] = _unpacked(k, c)
        for inner in body.ops:
            if isinstance(inner, scf.YieldOp):
                for y, c in zip(inner.operands, carried, strict=True):
                    _assign(k, c, k.vals[y])
                continue
            k.lower_op(inner)
        k.emit(ptx.AssignOp("b32", iv, k.add(iv, step)))
    k.emit(ptx.BraOp(top, k.r(ptx.SetpOp("lt", "s32", iv, ub)), uni=True))
    k.emit(ptx.LabelOp(end))
    for res, c in zip(op.results, carried, strict=True):
        k.vals[res] = _unpacked(k, c)


@dataclass
class _Packed:
    """A loop-carried 16-bit tile kept as packed pairs (`regs[i]` holds elements 2i and
    2i+1): ptxas gives every .b16 register a whole 32-bit register, so carrying the
    halves would double the registers of, e.g., attention's P."""

    like: Frag
    regs: list[SSAValue]


def _packs(f: Frag) -> bool:
    return f.dim is None and f.dtype in ("bf16", "f16") and len(f.regs) % 2 == 0


def _pairs(k: KernelLowering, f: Frag) -> list[SSAValue]:
    regs = k.materialize(f).regs
    return [pack_pair(k, regs[i], regs[i + 1]) for i in range(0, len(regs), 2)]


def _unpacked(k: KernelLowering, c: object) -> object:
    """The carried value as the body sees it: packed pairs split again (the split is
    free where the halves only feed a wgmma A operand, which re-packs them)."""
    if not isinstance(c, _Packed):
        return c
    regs: list[SSAValue] = []
    for r in c.regs:
        u = ptx.UnpackB16Op(r)
        k.emit(u)
        regs += [u.lo, u.hi]
    return c.like.like(regs, c.like.dtype)


def _assign(k: KernelLowering, dst: object, src: object) -> None:
    if isinstance(dst, _Packed) and isinstance(src, Frag):
        for d, s in zip(dst.regs, _pairs(k, src), strict=True):
            if d is not s:
                k.emit(ptx.AssignOp("b32", d, s))
        return
    if isinstance(dst, Frag) and isinstance(src, Frag):
        for d, s in zip(dst.regs, src.regs, strict=True):
            if d is not s:
                k.emit(ptx.AssignOp(mov_type(dst.dtype), d, s))
        return
    if isinstance(dst, SSAValue) and isinstance(src, SSAValue):
        if dst is not src:
            k.emit(ptx.AssignOp(mov_type(reg_kind(dst)), dst, src))
        return
    raise CompileError("convert-to-ptx: mismatched loop-carried values", None)


@handles(scf.IfOp)
def _if(k: KernelLowering, op: scf.IfOp) -> None:
    """Branches; results live in registers both branches write (`ptx.assign`).  A result
    that one branch yields unchanged from before the `if`, with no other use, keeps that
    value's registers: only the other branch writes them (no copy, no extra live tile)."""
    cond = k.scalar(op.cond)
    else_label, end = k.label("else"), k.label("endif")
    holders: list[object] | None = _reused_holders(k, op)
    k.emit(ptx.BraOp(else_label, cond, negate=True, uni=True))
    with k.scope():
        holders = _branch(k, op.true_region.block, holders)
    k.emit(ptx.BraOp(end, uni=True))
    k.emit(ptx.LabelOp(else_label))
    if op.false_region.blocks:
        with k.scope():
            _branch(k, op.false_region.block, holders)
    elif op.results:
        raise CompileError("convert-to-ptx: scf.if with results needs an else branch", op)
    k.emit(ptx.LabelOp(end))
    for res, holder in zip(op.results, holders, strict=True):
        k.vals[res] = holder


def _reused_holders(k: KernelLowering, op: scf.IfOp) -> list[object] | None:
    if not op.results or not op.false_region.blocks:
        return None
    yields = [r.block.last_op for r in (op.true_region, op.false_region)]
    holders: list[object | None] = []
    for i in range(len(op.results)):
        found = None
        for y in yields:
            assert isinstance(y, scf.YieldOp)
            v = y.operands[i]
            x = k.vals.get(v)
            inside = all(op.is_ancestor(u.operation) for u in v.uses)
            if isinstance(x, Frag) and inside and len(set(x.regs)) == len(x.regs):
                found = x
        holders.append(found)
    return holders if all(h is not None for h in holders) else None


def _branch(k: KernelLowering, block: Block, holders: list[object] | None) -> list[object]:
    """Lowers one branch; its yielded values go into `holders` (made on the first)."""
    for inner in block.ops:
        if not isinstance(inner, scf.YieldOp):
            k.lower_op(inner)
            continue
        values = [k.vals[v] for v in inner.operands]
        if holders is None:
            holders = [_fresh_like(k, v) for v in values]
        for h, v in zip(holders, values, strict=True):
            _assign(k, h, v)
    return holders if holders is not None else []


def _fresh_like(k: KernelLowering, v: object) -> object:
    """New registers of the same classes as a value, defined by later assigns."""
    if isinstance(v, Frag):
        kind = reg_kind(v.regs[0])
        return v.like([k.r(ptx.DeclareRegOp(kind)) for _ in v.regs], v.dtype)
    if isinstance(v, SSAValue):
        return k.r(ptx.DeclareRegOp(reg_kind(v)))
    raise CompileError("convert-to-ptx: unsupported scf.if result", None)
