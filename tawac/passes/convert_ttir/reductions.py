"""`tt.reduce` -> `tile.reduce`."""

from __future__ import annotations

from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter

#: Combining ops of `tt.reduce` and the `tile.reduce` kind each is.
_REDUCE_KINDS = {
    "arith.maxnumf": "max",
    "arith.maximumf": "max",
    "arith.addf": "sum",
}


@converts(tt.ReduceOp)
def _reduce(em: _Emitter, op: tt.ReduceOp) -> None:
    """`tl.max(x, axis)` / `tl.sum(x, axis)` of a 2-d float tile -> `tile.reduce`."""
    comb = op.combiner()
    kind = _REDUCE_KINDS.get(comb.name) if comb is not None else None
    (src,) = op.srcs if len(op.srcs) == 1 else (None,)
    if kind is None or src is None or len(src.type.get_shape()) != 2:
        raise _error("a reduction other than tl.max or tl.sum of one 2-d tile", op)
    red = tile.ReduceOp(kind, em.get(src, op), op.axis.value.data, op.reduced[0].type)
    em.values[op.reduced[0]] = em.add(red).result
