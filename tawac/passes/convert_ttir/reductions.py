"""`tt.reduce` -> `tile.reduce`: a 2-d tile along one dimension to a 1-d tile, a 1-d tile
to a scalar."""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, TensorType

from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter

#: Combining ops of `tt.reduce` and the `tile.reduce` kind each is.
_REDUCE_KINDS = {
    "arith.maxnumf": "max",
    "arith.maximumf": "max",
    "arith.minnumf": "min",
    "arith.minimumf": "min",
    "arith.addf": "sum",
}

_REFUSED = "a reduction other than tl.max, tl.min or tl.sum of one 1-d or 2-d float tile"


@converts(tt.ReduceOp)
def _reduce(em: _Emitter, op: tt.ReduceOp) -> None:
    """`tl.max(x, axis)` / `tl.min(x, axis)` / `tl.sum(x, axis)` of a float tile ->
    `tile.reduce`: of a 2-d tile, a 1-d tile (`tl.sum(dw, axis=0)`: the column sums); of a
    1-d tile, along axis 0, a scalar (`tl.max(row, axis=0)`)."""
    comb = op.combiner()
    kind = _REDUCE_KINDS.get(comb.name) if comb is not None else None
    (src,) = op.srcs if len(op.srcs) == 1 else (None,)
    t = src.type if src is not None else None
    if kind is None or not isinstance(t, TensorType) or not isinstance(t.element_type, AnyFloat):
        raise _error(_REFUSED, op)
    if t.get_num_dims() not in (1, 2):
        raise _error(_REFUSED, op)
    red = tile.ReduceOp(kind, em.get(src, op), op.axis.value.data, op.reduced[0].type)
    em.values[op.reduced[0]] = em.add(red).result
