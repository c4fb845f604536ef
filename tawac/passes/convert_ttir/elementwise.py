"""Elementwise float math: `tt.fp_to_fp` -> `arith.truncf` / `arith.extf`; float arith and
math ops (and float constants) copied, Triton's f32 `/` with `fastmath<arcp>`; ops on
float vectors given a size-1 dimension done on the vectors. Its rows for `Operation` take
the ops no row of their class took, in this order: math on such vectors, the copy, the
index work the plan rebuilds (dropped)."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, TensorType
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Operation

from tawac.dialects import tt
from tawac.passes.convert_ttir.common import _elem, _error, _is_f32, _is_float
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.memory import _is_index_work, _only_other


@converts(tt.FpToFpOp)
def _fp_to_fp(em: _Emitter, op: tt.FpToFpOp) -> None:
    """`x.to(tl.float8e4nv)` and back: `arith.truncf` (round to nearest even, the only
    rounding tawac emits) or `arith.extf`."""
    src = em.get(op.src, op)
    bits = [_elem(t).bitwidth for t in (op.src.type, op.result.type)]
    if bits[1] < bits[0]:
        if op.rounding is not None and op.rounding.data != "rtne":
            raise _error(f"an fp8 conversion rounding {op.rounding.data} (tawac rounds rtne)", op)
        new = arith.TruncFOp(src, op.result.type)
    else:
        new = arith.ExtFOp(src, op.result.type)
    new.location = op.location
    em.values[op.result] = em.add(new).result


def _of_integer_scalar(em: _Emitter, op: arith.SIToFPOp) -> bool:
    return not isinstance(op.input.type, TensorType)


@converts(arith.SIToFPOp, when=_of_integer_scalar)
def _int_to_float(em: _Emitter, op: arith.SIToFPOp) -> None:
    """A scalar of the kernel's integer code as a float (`tl.sum(x, axis=0) / N`: N as
    f32): the scalar rebuilt over index (`_Emitter.scalar`: a size is its tensor's
    `tile.dim`, a count read under a lock the value read), cast to the integer type it
    had, then `arith.sitofp`."""
    v = arith.IndexCastOp(em.scalar(op.input, op), op.input.type)
    new = arith.SIToFPOp(em.add(v).result, op.result.type)
    em.values[op.result] = em.add(new).result


def _is_data(op: Operation) -> bool:
    """An op on float tiles (or a float constant) the tile kernel keeps as it is."""
    if not op.results:
        return False
    if not _is_float(op.results[0]):
        return False
    if isinstance(op, arith.ConstantOp):
        return isinstance(op.value, DenseIntOrFPElementsAttr | FloatAttr)
    return op.dialect_name() in ("arith", "math")


def _on_expanded(em: _Emitter, op: Operation) -> int | None:
    """The axis where every tensor operand of an elementwise op is a vector given a unit
    dimension (`v[None, :]` then `.to(tl.float32)`, or a product of two such): the op
    then works on the vectors; None otherwise."""
    axes = {em.expanded[o][1] for o in op.operands if o in em.expanded}
    tensors = [o for o in op.operands if isinstance(o.type, TensorType)]
    if len(axes) != 1 or not all(o in em.expanded for o in tensors):
        return None
    return axes.pop()


def _data_on_expanded(em: _Emitter, op: Operation) -> bool:
    return _is_data(op) and _on_expanded(em, op) is not None


@converts(Operation, when=_data_on_expanded)
def _expanded_math(em: _Emitter, op: Operation) -> None:
    """An elementwise op on vectors with a unit dimension, done on the vectors; its result
    keeps the unit dimension for the broadcast that reads it (`_broadcast`)."""
    axis = _on_expanded(em, op)
    assert axis is not None
    operands = [em.expanded[o][0] if o in em.expanded else em.get(o, op) for o in op.operands]
    types = []
    for r in op.results:
        t = r.type
        assert isinstance(t, TensorType)
        shape = [d for i, d in enumerate(t.get_shape()) if i != axis]
        types.append(TensorType(t.element_type, shape))
    new = type(op).create(
        operands=operands,
        result_types=types,
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    em.add(new)
    for r, v in zip(op.results, new.results, strict=True):
        em.expanded[r] = (v, axis)


def _copied(em: _Emitter, op: Operation) -> bool:
    return _is_data(op) and not _only_other(op)


@converts(Operation, when=_copied)
def _copy(em: _Emitter, op: Operation) -> None:
    """The op as it is, on what its operands became."""
    clone = op.clone(value_mapper={o: em.get(o, op) for o in op.operands})
    if isinstance(clone, arith.DivfOp) and _is_f32(clone.result):
        clone.fastmath = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_RECIP])  # Triton's `/`: 2 ulp
    em.add(clone)
    em.values.update(dict(zip(op.results, clone.results, strict=True)))


def _index_work(em: _Emitter, op: Operation) -> bool:
    return _is_index_work(op)


@converts(Operation, when=_index_work)
def _rebuilt(em: _Emitter, op: Operation) -> None:
    """Pointers, index tensors, masks, program order: rebuilt from the plan where read."""
