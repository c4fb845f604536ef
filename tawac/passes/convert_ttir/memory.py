"""Loads and stores: `tt.load` / `tt.descriptor_load` -> `tile.load` (of one i32 element:
`tile.load_index`), `tt.store` / `tt.descriptor_store` -> `tile.store` and an f32
`tt.atomic_rmw fadd` whose result is unused -> `tile.atomic_add` at the origins the
plan rebuilds; masks and a load's `other` (the tile load's padding: its zero fill, or
`padding V`); the index work (pointers, index tensors, masks, program order) the tile
kernel rebuilds from the plan instead of converting."""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, TensorType, i32
from xdsl.ir import Operation, SSAValue

from tawac.analysis.pointers import Access
from tawac.dialects import tile, tt
from tawac.passes.convert_ttir.common import _error, _located, _splat
from tawac.passes.convert_ttir.dispatch import converts
from tawac.passes.convert_ttir.emitter import _Emitter
from tawac.passes.convert_ttir.planning import atomic_add
from tawac.passes.convert_ttir.tensors import _stored, tensor_dims


def _indices(em: _Emitter, a: Access) -> list[SSAValue]:
    return [em.index(d.origin, a.op) for d, _ in tensor_dims(a)]


def _tile_order(a: Access) -> list[int]:
    return [i for _, i in tensor_dims(a) if i is not None]


def _element(em: _Emitter, op: Operation) -> bool:
    """A load or store of one element through a scalar pointer."""
    return not isinstance(op.ptr.type, TensorType)


@converts(tt.LoadOp, when=_element)
def _load_element(em: _Emitter, op: tt.LoadOp) -> None:
    """`tl.load(Mean + row)`: the 1-element tile at its index, and its one element as a
    scalar (`tile.reduce max` of one element is that element); f32 only (`tile.reduce`
    gives a scalar of its tile's element type, and the tile kernel's scalars are f32).
    One i32 element (`count = tl.load(Count)` under a lock) is `tile.load_index`: the
    tile kernel's integer scalars are index."""
    if op.result.type == i32:
        a = em.plan.accesses[op]
        load = tile.LoadIndexOp(em.get(a.base, op), _indices(em, a))
        em.values[op.result] = em.add(_located(load, op)).results[0]
        return
    if not isinstance(op.result.type, Float32Type):
        raise _error(f"a load of one {op.result.type} element (tawac reads f32 and i32 ones)", op)
    a = em.plan.accesses[op]
    t = TensorType(op.result.type, [1])
    load = em.add(tile.LoadOp(em.get(a.base, op), _indices(em, a), t))
    one = tile.ReduceOp("max", load.result, 0, op.result.type)
    em.values[op.result] = em.add(one).result


@converts(tt.StoreOp, when=_element)
def _store_element(em: _Emitter, op: tt.StoreOp) -> None:
    """`tl.store(Mean + row, mean)`: a store of the 1-element tile `tile.splat` of the
    scalar makes, at its index; f32 only (what `tile.splat` takes)."""
    if not isinstance(op.value.type, Float32Type):
        raise _error(f"a store of one {op.value.type} element (tawac stores f32 ones)", op)
    a = em.plan.accesses[op]
    one = TensorType(op.value.type, [1])
    splat = em.add(tile.SplatOp.build(operands=[em.get(op.value, op)], result_types=[one]))
    em.add(tile.StoreOp(splat.result, em.get(a.base, op), _indices(em, a)))


@converts(tt.LoadOp, tt.DescriptorLoadOp)
def _load(em: _Emitter, op: tt.LoadOp | tt.DescriptorLoadOp) -> None:
    """A load of the tensor at its origins, in the tensor's order (a 2-d tile read in the
    transpose of it is held transposed, `_Emitter.transposed`)."""
    a = em.plan.accesses[op]
    padding = _other(op) if isinstance(op, tt.LoadOp) else None
    order = _tile_order(a)
    shape = op.result.type.get_shape()
    t = TensorType(op.result.type.element_type, [shape[i] for i in order])
    load = em.add(tile.LoadOp(em.get(a.base, op), _indices(em, a), t, padding=padding))
    em.values[op.result] = load.result
    if order != sorted(order):
        if len(order) != 2:
            raise _error("a permuted load of more than two dimensions", op)
        em.transposed.add(op.result)


@converts(tt.StoreOp, tt.DescriptorStoreOp)
def _store(em: _Emitter, op: tt.StoreOp | tt.DescriptorStoreOp) -> None:
    """A store of the tile to the tensor at its origins."""
    a = em.plan.accesses[op]
    if _tile_order(a) != sorted(_tile_order(a)):
        raise _error("a store of a tile in the transpose of its tensor's order", op)
    em.add(tile.StoreOp(em.get(_stored(op), op), em.get(a.base, op), _indices(em, a)))


def _adds(em: _Emitter, op: tt.AtomicRmwOp) -> bool:
    return atomic_add(op)


@converts(tt.AtomicRmwOp, when=_adds)
def _atomic_add(em: _Emitter, op: tt.AtomicRmwOp) -> None:
    """`tl.atomic_add(ptr, v, mask=...)` (f32, result unused: what the plan keeps): the
    tile added to the tensor at its origins."""
    a = em.plan.accesses[op]
    if _tile_order(a) != sorted(_tile_order(a)):
        raise _error("an atomic add of a tile in the transpose of its tensor's order", op)
    em.add(tile.AtomicAddOp(em.get(_stored(op), op), em.get(a.base, op), _indices(em, a)))


def _only_other(op: Operation) -> bool:
    """A constant used only as masked loads' `other` (the tile load's zero fill)."""
    uses = [u for r in op.results for u in r.uses]
    return bool(uses) and all(
        isinstance(u.operation, tt.LoadOp) and u.operation.other is r
        for r in op.results
        for u in r.uses
    )


def _is_index_work(op: Operation) -> bool:
    return isinstance(
        op,
        tt.SplatOp
        | tt.BroadcastOp
        | tt.ExpandDimsOp
        | tt.MakeRangeOp
        | tt.AddPtrOp
        | tt.GetProgramIdOp
        | tt.GetNumProgramsOp
        | tt.CmpiOp
        | arith.ConstantOp
        | arith.AddiOp
        | arith.SubiOp
        | arith.MuliOp
        | arith.DivSIOp
        | arith.RemSIOp
        | arith.MinSIOp
        | arith.MaxSIOp
        | arith.AndIOp
        | tt.ExtSIOp
        | tt.ExtUIOp
        | tt.TruncIOp
        | tt.MakeTensorDescOp,
    )


def _other(op: tt.LoadOp) -> float | None:
    """The padding of the tile load of a masked load: its `other`, one constant value
    (the mask is the tensor's bounds, which the plan checks), None for 0 or no `other`."""
    if op.other is None:
        return None
    c = op.other.owner
    ok = isinstance(c, arith.ConstantOp) and isinstance(c.value, DenseIntOrFPElementsAttr)
    splat, value = _splat(c.value) if ok else (False, None)
    if not splat:
        raise _error("a masked load whose other is not one constant value", op)
    value = float(value)
    return None if value == 0.0 and math.copysign(1.0, value) > 0 else value
