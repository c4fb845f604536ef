"""`tl.where`: a select of float tiles by a mask of index comparisons (`tile.iota`,
`tile.cmpi`, `tile.select`), by a comparison of float tiles (`arith.cmpf`,
`arith.select`), or none where it is the zero fill of the load it selects from."""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, i32
from xdsl.ir import Operation, SSAValue

from tawac.analysis import pointers
from tawac.analysis.pointers import Access, PointerError, Poly, Range
from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _located, _splat
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.scalars import _single_symbol
from tawac.passes.convert_ttir.tensors import tensor_dims


def _tensor_mask(em: _Emitter, op: tt.SelectOp) -> bool:
    return isinstance(op.cond.type, TensorType)


@converts(tt.SelectOp, when=_tensor_mask)
def _select(em: _Emitter, op: tt.SelectOp) -> None:
    """`tl.where(mask, a, b)` of float tiles, the mask a comparison of two index tiles
    `origin + range_d` (`offs_m[:, None] >= start_n + offs_n[None, :]`): `tile.iota` of
    each side, `tile.cmpi`, `tile.select`; none where it is the zero fill of the load it
    selects from (`_zero_filled`)."""
    load = _zero_filled(em, op)
    if load is not None:
        em.values[op.result] = em.values[load.result]
        if load.result in em.transposed:
            em.transposed.add(op.result)
        return
    cond = op.cond
    while isinstance(cond.owner, tt.BroadcastOp):
        cond = cond.owner.src
    cmp = cond.owner
    shape = op.result.type.get_shape()
    if isinstance(cmp, tt.CmpfOp) and cond is op.cond:
        _select_by_value(em, op, cmp)
        return
    if len(shape) not in (1, 2):
        raise _error("a tl.where whose mask is not comparisons of 1-d or 2-d index tiles", op)
    a, b = em.get(op.lhs, op), em.get(op.rhs, op)
    em.values[op.result] = _where(em, op.cond, a, b, shape, op)


def _zero_filled(em: _Emitter, op: tt.SelectOp) -> tt.LoadOp | None:
    """The load of `tl.where(mask, tl.load(p, mask=...), 0.0)` where the select changes
    nothing in the tile kernel: the other value is +0.0 (the select's and the load's, if it
    has one) and `mask` is false only where
    the converted `tile.load` reads outside its tensor, which it reads as +0.0. The mask
    must be a conjunction (`&`, through broadcasts) of bounds the load's own mask puts on
    it (`_mask_bound`); None otherwise (the select is converted)."""
    load = op.lhs.owner
    if not isinstance(load, tt.LoadOp) or load.mask is None:
        return None
    if not _is_positive_zero(op.rhs):
        return None
    if load.other is not None and not _is_positive_zero(load.other):
        return None  # the tile load reads its other value outside, not +0.0
    a = em.plan.accesses.get(load)
    if a is None or load.result not in em.values:
        return None
    sizes = em.plan.tensors[a.base].sizes
    position = {tile_index: j for j, (_, tile_index) in enumerate(tensor_dims(a))}
    work = [op.cond]
    while work:
        v = work.pop()
        while isinstance(v.owner, tt.BroadcastOp):
            v = v.owner.src
        if isinstance(v.owner, arith.AndIOp):
            work += [v.owner.lhs, v.owner.rhs]
        elif not _mask_bound(em, v, a, sizes, position):
            return None
    return load


def _mask_bound(em: _Emitter, v: SSAValue, a: Access, sizes, position) -> bool:
    """`v` is one comparison false only outside the tensor `a` reads: along a tile
    dimension d, `origin_d + range_d < S` with S the bound the load's own mask puts on d
    and the size of the tensor's dimension (the proof `tawac.analysis.pointers` makes of
    the load's mask, on `v`), or `origin_d + range_d >= 0`."""
    cmp = v.owner
    if not isinstance(cmp, tt.CmpiOp):
        return False
    reader = em.plan.reader
    origins = [d.origin for d in a.dims]
    try:
        if cmp.predicate_name == "slt":
            ((d, bound),) = pointers._mask_bounds(v, origins, reader, cmp).items()
            return bound == a.dims[d].bound and _single_symbol(bound) == [sizes[position[d]]]
        if cmp.predicate_name == "sge":
            lhs, rhs = reader.int_poly(cmp.lhs), reader.int_poly(cmp.rhs)
            return not rhs.terms and any(lhs == a.dims[d].origin + Poly.sym(Range(d))
                                         for d in range(len(a.dims)))  # fmt: skip
    except PointerError:
        return False
    return False


def _is_positive_zero(v: SSAValue) -> bool:
    """`v` is a splat constant of +0.0 (what `tile.load` reads outside its tensor)."""
    c = v.owner
    if not isinstance(c, arith.ConstantOp) or not isinstance(c.value, DenseIntOrFPElementsAttr):
        return False
    splat, value = _splat(c.value)
    if not splat:
        return False
    x = float(value)
    return x == 0.0 and math.copysign(1.0, x) > 0


def _where(em: _Emitter, cond: SSAValue, a: SSAValue, b: SSAValue, shape, at) -> SSAValue:
    """`tl.where(cond, a, b)` for a mask of comparisons of index tiles joined by `&`
    (`(offs_n < seqlen) & (offs_m >= offs_n)`): where(m1 & m2, a, b) is where(m1,
    where(m2, a, b), b), one `tile.select` per comparison."""
    while isinstance(cond.owner, tt.BroadcastOp | tt.ExpandDimsOp):
        cond = cond.owner.src
    both = cond.owner
    if isinstance(both, arith.AndIOp):
        inner = _where(em, both.rhs, a, b, shape, at)
        return _where(em, both.lhs, inner, b, shape, at)
    cmp = both
    if not isinstance(cmp, tt.CmpiOp):
        raise _error("a tl.where whose mask is not comparisons of 1-d or 2-d index tiles", at)
    pred = cmp.predicate_name
    if pred not in tile.CMPI_PREDICATES:
        raise _error(f"a tl.where mask compared by {pred}", cmp)
    sides = [_iota(em, v, shape, cmp) for v in (cmp.lhs, cmp.rhs)]
    mask = em.add(tile.CmpiOp(pred, *sides)).result
    return em.add(_located(tile.SelectOp(mask, a, b), at)).result


def _select_by_value(em: _Emitter, op: tt.SelectOp, cmp: tt.CmpfOp) -> None:
    """`tl.where(x >= 0, x, 0.01 * x)` (the tutorial's leaky ReLU): a comparison of float
    tiles and the select, as xDSL's `arith.cmpf` and `arith.select` on tiles."""
    pred = cmp.PREDICATES[cmp.predicate.value.data]
    a, b = em.get(cmp.lhs, cmp), em.get(cmp.rhs, cmp)
    # as tile programs write it: xDSL's arith.cmpf types its result i1, the backend and
    # the interpreter compare element by element
    mask = em.add(arith.CmpfOp(a, b, pred))
    x, y = em.get(op.lhs, op), em.get(op.rhs, op)
    em.values[op.result] = em.add(arith.SelectOp(mask.result, x, y)).result


def _iota(em: _Emitter, v: SSAValue, shape, at: Operation) -> SSAValue:
    """An index tile `origin + range_d` as `tile.iota d, origin` (1-d: `cols = off +
    tl.arange(0, BLOCK)` is `tile.iota 0, off`); a scalar as `tile.splat`."""
    try:
        p = em.plan.reader.int_poly(v)
    except PointerError as e:
        raise _error(e.message, e.op or at) from None
    dims = p.ranges()
    t = TensorType(i32, list(shape))
    if not dims:  # a scalar side (`offs_n[None, :] < seqlen`): the scalar everywhere
        splat = tile.SplatOp.build(operands=[em.index(p, at)], result_types=[t])
        return em.add(splat).result
    unit = [m for m in p.terms if any(isinstance(s, Range) for s in m)]
    if len(dims) != 1 or len(unit) != 1 or len(unit[0]) != 1 or p.terms[unit[0]] != 1:
        raise _error(f"a mask side {p} that is not one index range plus a scalar", at)
    (d,) = dims
    origin = em.index(p - Poly({unit[0]: 1}), at)
    return em.add(_located(tile.IotaOp(d, origin, t), at)).result


def _read_by_selects(em: _Emitter, op: tt.CmpfOp) -> bool:
    return all(isinstance(u.operation, tt.SelectOp) and u.index == 0 for u in op.result.uses)


@converts(tt.CmpfOp, when=_read_by_selects)
def _float_mask(em: _Emitter, op: tt.CmpfOp) -> None:
    """A float mask: built where its select reads it (`_select_by_value`)."""
