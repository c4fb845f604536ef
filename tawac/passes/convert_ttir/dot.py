"""`tt.dot` -> `tile.dot`, and `tt.trans` of the tile it reads (`transpose_lhs` /
`transpose_rhs`)."""

from __future__ import annotations

from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _located
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter


@converts(tt.DotOp)
def _dot(em: _Emitter, op: tt.DotOp) -> None:
    """`tile.dot` at the `tt.dot`'s Python line, reading a transposed operand (a load in
    its tensor's order, `tt.trans`) transposed."""
    v = [em.get(x, op) for x in (op.a, op.b, op.c)]
    if op.c in em.transposed:
        raise _error("a tt.dot accumulating into a transposed tile", op)
    flip = [x in em.transposed for x in (op.a, op.b)]
    dot = tile.DotOp(*v, transpose_lhs=flip[0], transpose_rhs=flip[1])
    em.values[op.result] = em.add(_located(dot, op)).result


@converts(tt.TransOp)
def _trans(em: _Emitter, op: tt.TransOp) -> None:
    """`tl.trans(x)` / `x.T` of a 2-d tile: the same tile, which `tt.dot` reads
    transposed (or, transposed twice, as it is)."""
    if len(op.result.type.get_shape()) != 2:
        raise _error("a tt.trans of other than a 2-d tile", op)
    em.values[op.result] = em.get(op.src, op)
    if op.src not in em.transposed:
        em.transposed.add(op.result)
