"""Float tiles given a size-1 dimension (`tt.expand_dims`), broadcast (`tt.broadcast` ->
`tile.broadcast`) and splat (`tt.splat` of an f32 -> `tile.splat`); the same ops on
index tensors are index work the plan rebuilds (`tawac.passes.convert_ttir.memory`)."""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type

from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _float_result
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter


@converts(tt.ExpandDimsOp, when=_float_result)
def _expand_dims(em: _Emitter, op: tt.ExpandDimsOp) -> None:
    """`v[None, :]` / `v[:, None]` of a float vector: the vector and the new axis, which
    the elementwise ops and the broadcast reading it use (`_Emitter.expanded`)."""
    em.expanded[op.result] = (em.get(op.src, op), op.axis.value.data)


@converts(tt.BroadcastOp, when=_float_result)
def _broadcast(em: _Emitter, op: tt.BroadcastOp) -> None:
    """`v[None, :]` or `v[:, None]` broadcast to a 2-d tile: `tile.broadcast` of the
    vector along the result dimension it spans."""
    found = em.expanded.get(op.src)
    shape = op.result.type.get_shape()
    if found is None or len(shape) != 2:
        raise _error("a broadcast of a float tile other than a vector to 2-d", op)
    src, axis = found
    b = tile.BroadcastOp(src, 1 - axis, op.result.type)
    em.values[op.result] = em.add(b).result


@converts(tt.SplatOp, when=_float_result)
def _splat(em: _Emitter, op: tt.SplatOp) -> None:
    """A splat of an f32 scalar -> `tile.splat`."""
    if not isinstance(op.src.type, Float32Type):
        raise _error("a splat of a scalar other than f32", op)
    splat = tile.SplatOp.build(operands=[em.get(op.src, op)], result_types=[op.result.type])
    em.values[op.result] = em.add(splat).result
