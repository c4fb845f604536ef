"""`sink-reductions`: a reduction folded into a loop-carried accumulator on every
iteration becomes an elementwise accumulation, reduced once after the loop.

A row kernel written as tawac's examples write it (the RMS norm's sum of squares, the
layer norm's mean) reduces each column block inside the loop and adds the block's row
sums to a running one:

    %s = scf.for ... iter_args(%acc = %zero) -> (tensor<8xf32>) {
      %r = tile.reduce sum %sq, 1 : tensor<8x256xf32> -> tensor<8xf32>
      %n = arith.addf %acc, %r fastmath<reassoc> : tensor<8xf32>
      scf.yield %n : tensor<8xf32>
    }

On the GPU each block's row reduction is a chain of dependent warp shuffles (5 for a row
across 32 lanes) on the consumer's critical path, once per block. Triton's tutorials
write the same loop with a tile of partial sums instead (`_mean += a`, then
`tl.sum(_mean)` after the loop), which costs one shuffle chain per row in all. This pass
makes the first spelling the second:

    %s2 = scf.for ... iter_args(%acc2 = %zero2) -> (tensor<8x256xf32>) {
      %n2 = arith.addf %acc2, %sq fastmath<reassoc> : tensor<8x256xf32>
      scf.yield %n2 : tensor<8x256xf32>
    }
    %r = tile.reduce sum %s2, 1 : tensor<8x256xf32> -> tensor<8xf32>
    %s = arith.addf %zero, %r fastmath<reassoc>      (dropped where %zero is the identity)

Input: an `scf.for` iteration argument `%acc` whose only use is one combining op
`%n = combine(%acc, %r)` (either operand order) of a `tile.reduce` result `%r` used only
there, with `%n` used only by the loop's `scf.yield` at `%acc`'s position. The combining
op matches the reduction: `arith.maximumf` for max, `arith.minimumf` for min (exact in
any order: the maximum of a set), `arith.addf` for sum only where its fastmath flags
allow reassociation (`reassoc` or `fast`): the sum of the same terms in another order
rounds differently, so a loop that does not say so keeps its order. A reduction of a
2-d tile along a dimension, or of a 1-d tile to a scalar, both qualify.

The accumulator grows from the reduction's result to its source tile, held in registers
across the loop: the pass sinks a loop's reductions only while their tiles together hold
at most `MAX_ELEMENTS_PER_THREAD` f32 values a consumer thread (a warp group of 128
threads for each 64 rows, at least one). A loop where they would not fit keeps its
reductions (`tawac.sink_reductions` on the kernel records what was sunk and what was
kept, which `explain` shows). Knob `sink_reductions` (on).

The rewrite builds a new `scf.for` with the sunk accumulators' arguments replaced by the
tile-shaped ones (identity-filled: 0, -inf, +inf), the combining op by its elementwise
form on the tile (the same flags), and after the loop the reduction and, unless the
initial value is the identity constant, the combination with it. It is a tile-level
rewrite, validated by `tawac check` in the reference interpreter like the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import to_attr
from tawac.dialects import tile
from tawac.target.hopper import HOPPER

#: The kernel attribute recording the decision: {"sunk": n, "kept": [reasons]}.
SINK_ATTR = "tawac.sink_reductions"

#: f32 accumulator values a consumer thread may hold across one loop for sunk reductions.
MAX_ELEMENTS_PER_THREAD = 64

#: The combining op of each reduction kind, and its identity.
COMBINE: dict[str, type[Operation]] = {
    "sum": arith.AddfOp,
    "max": arith.MaximumfOp,
    "min": arith.MinimumfOp,
}
IDENTITY = {"sum": 0.0, "max": -math.inf, "min": math.inf}


@dataclass(frozen=True)
class Sinkable:
    """One accumulator of a loop that can be sunk: its iteration argument's position,
    the reduction and the combining op."""

    index: int  # among the loop's iteration arguments
    reduce: tile.ReduceOp
    combine: Operation
    acc_first: bool  # combine(acc, r) rather than combine(r, acc)

    @property
    def tile_type(self) -> TensorType:
        t = self.reduce.source.type
        assert isinstance(t, TensorType)
        return t


def _reassociates(op: Operation) -> bool:
    flags = getattr(op, "fastmath", None)
    if flags is None:
        return False
    return FastMathFlag.REASSOC in flags.data


def sinkable(loop: scf.ForOp, index: int) -> Sinkable | str | None:
    """The accumulator at iteration argument `index` of `loop` as a `Sinkable`; why not,
    where the argument is combined with a reduction; None where it is not (no reduction
    to sink)."""
    body = loop.body.block
    acc = body.args[index + 1]
    uses = list(acc.uses)
    if len(uses) != 1:
        return None
    combine = uses[0].operation
    if combine.parent_block() is not body or len(combine.operands) != 2:
        return None
    other = combine.operands[1 - uses[0].index]
    red = other.owner
    if not isinstance(red, tile.ReduceOp):
        return None
    kind = red.kind.data
    if len(list(other.uses)) != 1:
        return f"a {kind} reduction used elsewhere in the loop"
    if type(combine) is not COMBINE.get(kind):
        return f"a {kind} reduction combined by {combine.name}"
    if kind == "sum" and not _reassociates(combine):
        return "a sum without fastmath<reassoc>: its order is kept"
    if not isinstance(red.source.type, TensorType):
        return f"a {kind} reduction of a value that is not a tile"
    new = combine.results[0]
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    if [u.operation for u in new.uses] != [yield_op] or yield_op.operands[index] is not new:
        return f"a running {kind} also used in the loop"
    return Sinkable(index, red, combine, uses[0].index == 0)


def per_thread(t: TensorType) -> int:
    """f32 values a consumer thread holds of a tile of this type: a warp group for each
    m64 block of a 2-d tile's rows, at least one."""
    groups = max(1, t.get_shape()[0] // HOPPER.mma_m) if t.get_num_dims() == 2 else 1
    return -(-math.prod(t.get_shape()) // (groups * HOPPER.warp_group_size))


def _identity(kind: str, t: TensorType) -> arith.ConstantOp:
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [IDENTITY[kind]]))


def _is_identity(v: SSAValue, kind: str) -> bool:
    """Is `v` a constant every element of which is the reduction's identity?"""
    op = v.owner
    if not isinstance(op, arith.ConstantOp):
        return False
    attr = op.value
    if isinstance(attr, FloatAttr):
        values = [attr.value.data]
    elif isinstance(attr, DenseIntOrFPElementsAttr):
        values = list(attr.get_values())
    else:
        return False
    want = IDENTITY[kind]  # +0.0 for a sum: -0.0 + 0.0 is +0.0, not the initial -0.0
    sign = math.copysign(1.0, want)
    return bool(values) and all(x == want and math.copysign(1.0, x) == sign for x in values)


def _clone_combine(op: Operation, lhs: SSAValue, rhs: SSAValue, result: Attribute) -> Operation:
    """`op` (a combining arith op) on other operands and result type, with its flags."""
    cls = type(op)
    flags = getattr(op, "fastmath", None)
    if flags is not None:
        return cls(lhs, rhs, flags=flags, result_type=result)
    return cls(lhs, rhs, result_type=result)


def sink(loop: scf.ForOp, chosen: list[Sinkable]) -> scf.ForOp:
    """Rebuild `loop` with the `chosen` accumulators sunk (module docstring), each tile in
    its accumulator's position; returns the new loop."""
    body = loop.body.block
    inits = list(loop.iter_args)
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    yields = list(yield_op.operands)
    olds = [body.args[s.index + 1] for s in chosen]
    for s, old in zip(chosen, olds, strict=True):
        z = _identity(s.reduce.kind.data, s.tile_type)
        Rewriter.insert_op(z, InsertPoint.before(loop))
        inits[s.index] = z.result
        tile_arg = body.insert_arg(s.tile_type, old.index)  # before the old argument
        tile_arg.name_hint = f"{old.name_hint}_tile" if old.name_hint else None
        src = s.reduce.source
        lhs, rhs = (tile_arg, src) if s.acc_first else (src, tile_arg)
        new = _clone_combine(s.combine, lhs, rhs, s.tile_type)
        Rewriter.insert_op(new, InsertPoint.before(s.combine))
        yields[s.index] = new.results[0]
    Rewriter.replace_op(yield_op, scf.YieldOp(*yields))
    for s, old in zip(chosen, olds, strict=True):
        Rewriter.erase_op(s.combine)
        Rewriter.erase_op(s.reduce)
        body.erase_arg(old)
    region = loop.detach_region(loop.body)
    new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, inits, region)
    Rewriter.insert_op(new_loop, InsertPoint.after(loop))
    finals = list(new_loop.results)
    at = InsertPoint.after(new_loop)
    dead: list[Operation] = []  # identity constants no longer read
    for s in chosen:
        kind = s.reduce.kind.data
        red = tile.ReduceOp(kind, finals[s.index], s.reduce.dim.data, s.reduce.result.type)
        Rewriter.insert_op(red, at)
        at = InsertPoint.after(red)
        init = loop.iter_args[s.index]
        if _is_identity(init, kind):
            finals[s.index] = red.result
            dead.append(init.owner)
            continue
        lhs, rhs = (init, red.result) if s.acc_first else (red.result, init)
        fin = _clone_combine(s.combine, lhs, rhs, s.reduce.result.type)
        Rewriter.insert_op(fin, at)
        at = InsertPoint.after(fin)
        finals[s.index] = fin.results[0]
    for old, new in zip(loop.results, finals, strict=True):
        old.replace_all_uses_with(new)
    Rewriter.erase_op(loop)
    for op in dead:
        if op.parent is not None and not any(r.uses for r in op.results):
            Rewriter.erase_op(op)
    return new_loop


def choose(loop: scf.ForOp) -> tuple[list[Sinkable], list[str]]:
    """The accumulators of `loop` to sink (in argument order, while their tiles fit
    `MAX_ELEMENTS_PER_THREAD` a thread) and why the others with a reduction are kept."""
    chosen: list[Sinkable] = []
    kept: list[str] = []
    held = 0
    for i in range(len(loop.iter_args)):
        s = sinkable(loop, i)
        if s is None:
            continue
        if isinstance(s, str):
            kept.append(s)
            continue
        need = per_thread(s.tile_type)
        if held + need > MAX_ELEMENTS_PER_THREAD:
            kept.append(
                f"a {s.reduce.kind.data} over {'x'.join(map(str, s.tile_type.get_shape()))} "
                f"tiles: {held + need} values a thread, more than {MAX_ELEMENTS_PER_THREAD}"
            )
            continue
        held += need
        chosen.append(s)
    return chosen, kept


def apply_kernel(kernel: tile.KernelOp) -> None:
    sunk = 0
    kept: list[str] = []
    # innermost first: an inner loop's sunk result, reduced after it, may make an outer
    # loop's accumulation a reduction to sink in turn
    loops = [op for op in kernel.walk(region_first=True) if isinstance(op, scf.ForOp)]
    for loop in loops:
        chosen, why = choose(loop)
        kept.extend(why)
        if chosen:
            sink(loop, chosen)
            sunk += len(chosen)
    if sunk or kept:
        kernel.attributes[SINK_ATTR] = to_attr({"sunk": sunk, "kept": kept})


@dataclass(frozen=True)
class SinkReductionsPass(ModulePass):
    name = "sink-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in op.walk():
            if isinstance(k, tile.KernelOp):
                apply_kernel(k)
