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
from tawac.dialects import ptx
from tawac.support.diagnostics import CompileError


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
                _assign_all(
                    k, [(c, k.vals[y]) for y, c in zip(inner.operands, carried, strict=True)]
                )
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


def _moves(k: KernelLowering, dst: object, src: object) -> list[tuple[object, object, str]]:
    """The register moves (destination, source, mov type) that give `dst` the value `src`
    (a packed 16-bit destination packs its pairs first: that reads the sources now)."""
    if isinstance(dst, _Packed) and isinstance(src, Frag):
        return [(d, s, "b32") for d, s in zip(dst.regs, _pairs(k, src), strict=True)]
    if isinstance(dst, Frag) and isinstance(src, Frag):
        t = mov_type(dst.dtype)
        return [(d, s, t) for d, s in zip(dst.regs, src.regs, strict=True)]
    if isinstance(dst, SSAValue) and isinstance(src, SSAValue):
        return [(dst, src, mov_type(reg_kind(dst)))]
    raise CompileError("convert-to-ptx: mismatched loop-carried values", None)


def _regs(v: object) -> list[object]:
    if isinstance(v, Frag | _Packed):
        return list(v.regs)
    return [v]


def sequential_copies(moves: list[tuple[object, object]], save) -> list[tuple[object, object]]:
    """A parallel copy (every source read before any destination is written: the
    semantics of `scf.yield`) as sequential moves: a source that another move overwrites
    is saved first (`save(src)` returns the register holding its copy); moves of a
    register onto itself are dropped."""
    written = {id(d) for d, s in moves if d is not s}
    saved: dict[int, object] = {}
    for d, s in moves:
        if d is not s and id(s) in written and id(s) not in saved:
            saved[id(s)] = save(s)
    return [(d, saved.get(id(s), s)) for d, s in moves if d is not s]


def _assign_all(k: KernelLowering, pairs: list[tuple[object, object]]) -> None:
    """Assign every (destination, value) pair of a yield at once. In yield order, one
    pair could overwrite a register a later pair still reads: a software-pipelined loop
    carries shift registers (copy 2 <- copy 1, copy 1 <- new). Then every pair's moves
    are built first and go through `sequential_copies`; else each pair's moves are
    emitted in turn."""
    written: set[int] = set()
    hazard = False
    for dst, src in pairs:
        if any(id(r) in written for r in _regs(src)):
            hazard = True
            break
        written.update(id(d) for d, s in zip(_regs(dst), _regs(src), strict=False) if d is not s)
    if not hazard:
        for dst, src in pairs:
            for d, s, t in _moves(k, dst, src):
                if d is not s:
                    k.emit(ptx.AssignOp(t, d, s))
        return
    moves = [m for dst, src in pairs for m in _moves(k, dst, src)]
    types = {id(d): t for d, _, t in moves}
    types.update({id(s): t for _, s, t in moves})

    def save(s):
        return k.r(ptx.MovOp(types[id(s)], s))

    for d, s in sequential_copies([(d, s) for d, s, _ in moves], save):
        k.emit(ptx.AssignOp(types[id(d)], d, s))


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
        _assign_all(k, list(zip(holders, values, strict=True)))
    return holders if holders is not None else []


def _fresh_like(k: KernelLowering, v: object) -> object:
    """New registers of the same classes as a value, defined by later assigns."""
    if isinstance(v, Frag):
        kind = reg_kind(v.regs[0])
        return v.like([k.r(ptx.DeclareRegOp(kind)) for _ in v.regs], v.dtype)
    if isinstance(v, SSAValue):
        return k.r(ptx.DeclareRegOp(reg_kind(v)))
    raise CompileError("convert-to-ptx: unsupported scf.if result", None)
