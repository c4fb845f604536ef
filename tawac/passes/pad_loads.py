"""`pad-loads`: a load whose outside reads as a value other than zero becomes a zero-padded
load and selects of that value where an element is outside the tensor.

TMA fills the outside of a tensor with zeros; a ragged row's tail that must not change a
maximum reads `-inf` (`tile.load ... padding -inf`, Triton's `other=-float("inf")`).

Input: a `tile.load %t[%r, %c] padding V` of a 2-d tile from a 2-d tensor (not stacked).
Output, before it (after `arith.extf %z` to f32 where the tile is bf16 or f16 and every
use of the load is such an extf: the backend selects f32 tiles):

    %z    = tile.load %t[%r, %c] : ... -> tensor<RxCxT>          (zero-padded)
    %rows = tile.iota 0, %r        %cols = tile.iota 1, %c
    %M    = tile.splat (tile.dim %t[0])   %N = tile.splat (tile.dim %t[1])
    %zero = tile.splat 0
    %pad  = arith.constant dense<V> : tensor<RxCxf32>
    %a = tile.select (rows < M), %z, %pad;   %b = tile.select (cols < N), %a, %pad
    %d = tile.select (rows >= 0), %b, %pad;  %e = tile.select (cols >= 0), %d, %pad

and the load's uses (the extfs' uses) read `%e`. In a loop, guard-masks (after this
pass) computes each select only on the iterations where some element is outside. A load
this cannot rewrite (a stacked one, a tile of lower rank than its tensor, a bf16 load read
other than through an extf to f32, a value its element type cannot hold: 1e30 in f16)
keeps its padding, and warp-specialize refuses it with a located error.

The rewrite is an xDSL `RewritePattern` on `tile.load` (`PadLoad`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i32,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tawac.dialects import tile

#: Element types a padding constant may have, with the largest finite value of each.
_FINITE = {
    BFloat16Type: float.fromhex("0x1.fep127"),
    Float16Type: 65504.0,
    Float32Type: float.fromhex("0x1.fffffep127"),
}


def _holds(element: object, value: float) -> bool:
    """Whether a tile of `element` holds `value`: infinities and NaN in every float type,
    a finite value within the type's range (the verifier's rule for constants)."""
    top = _FINITE.get(type(element))
    if top is None:
        return False
    return not math.isfinite(value) or abs(value) <= top


def rewritable(load: tile.LoadOp) -> bool:
    """A padded 2-d load of a 2-d tensor, not stacked, whose padding its tile can hold."""
    t = load.result.type
    src = load.source.type
    if load.zero_padded or load.stack is not None:
        return False
    if not isinstance(t, TensorType) or t.get_num_dims() != 2:
        return False
    if not isinstance(src, tile.GlobalTensorType) or src.rank != 2:
        return False
    return _holds(t.element_type, load.padding_value)


def _f32_uses(load: tile.LoadOp) -> list[arith.ExtFOp] | None:
    """The `arith.extf` to f32 that are every use of a bf16/f16 load (the selects go after
    one of them: the backend selects f32 tiles), [] for an f32 load, else None."""
    t = load.result.type
    assert isinstance(t, TensorType)
    if isinstance(t.element_type, Float32Type):
        return []
    users = [u.operation for u in load.result.uses]
    if not users or not all(
        isinstance(u, arith.ExtFOp)
        and isinstance(u.result.type, TensorType)
        and isinstance(u.result.type.element_type, Float32Type)
        for u in users
    ):
        return None
    return users  # type: ignore[return-value]


@dataclass
class PadLoad(RewritePattern):
    """`tile.load ... padding V` -> a zero-padded load and the selects of the module
    docstring (after its widening to f32, where the load is bf16 or f16)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.LoadOp, rewriter: PatternRewriter) -> None:
        if not rewritable(op):
            return
        widened = _f32_uses(op)
        if widened is None:
            return
        t = op.result.type
        assert isinstance(t, TensorType)
        shape = t.get_shape()
        f32_type = TensorType(Float32Type(), shape)
        mask_type = TensorType(i32, shape)
        ops: list[Operation] = []

        def add(new: Operation) -> SSAValue:
            new.location = op.location
            ops.append(new)
            return new.results[0]

        value = add(tile.LoadOp(op.source, list(op.indices), t))
        value.name_hint = op.result.name_hint
        if widened:
            value = add(arith.ExtFOp(value, f32_type))
        pad = add(
            arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(f32_type, [op.padding_value]))
        )
        zero = add(arith.ConstantOp(IntegerAttr(0, IndexType())))
        low = add(tile.SplatOp.create(operands=[zero], result_types=[mask_type]))
        for dim, origin in enumerate(op.indices):
            coords = add(tile.IotaOp(dim, origin, mask_type))
            size = add(tile.DimOp(op.source, dim))
            extent = add(tile.SplatOp.create(operands=[size], result_types=[mask_type]))
            inside = add(tile.CmpiOp("slt", coords, extent))
            value = add(tile.SelectOp(inside, value, pad))
            above = add(tile.CmpiOp("sge", coords, low))
            value = add(tile.SelectOp(above, value, pad))
        rewriter.insert(ops, InsertPoint.before(op))
        value.name_hint = (widened[0].result if widened else op.result).name_hint
        for ext in widened:
            ext.result.replace_all_uses_with(value)
            rewriter.erase(ext)
        if not widened:
            op.result.replace_all_uses_with(value)
        rewriter.erase(op)


class PadLoadsPass(ModulePass):
    """Loads padded with a value other than zero as zero-padded loads and selects."""

    name = "pad-loads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PadLoad(), apply_recursively=False).rewrite_module(op)
