"""`overlap-epilogue`: a persistent consumer's epilogue of tile t runs under the first MMA
of tile t + 1, where `#tawac.schedule` says `overlap` (run after `coarse-pipeline`; the
planner sets it where `tawac.schedule.planner.overlaps_epilogue` holds).

A persistent kernel's consumer loops over tiles; each tile ends with an epilogue that
issues no MMA (attention: O / l, the conversion, the store), and the next tile starts
with an MMA it must wait for (attention: S_0 = Q K_0^T, before the first softmax).
Both consumer warp groups share a tile, so during the epilogue the tensor core idles,
and during the first MMA of the next tile the warp groups wait. Rotated, the tile loop
carries what the epilogue reads (the accumulator, the row sums, the tile index) to the
next iteration and runs the epilogue of the previous tile right after issuing the first
MMA of this one, before its wait:

    for t:  ...; issue S_0(t); [epilogue(t - 1) if t is not the first]; wait S_0(t); ...
    epilogue(last tile)                                   (after the loop, if any tile)

The epilogue is the backward slice of the body's top-level `tile.store`s and
`tile.atomic_add`s (which move with it, in their order) through
operations without memory effects (arith, math, `tile.broadcast`, `tile.splat`,
`tile.dim`); what the slice reads from other operations of the body (the key loop's
results) or from the body's arguments (the tile index) is carried. The first MMA is the
first `tile.dot` of the body, at its top level or in the `then` region of a top-level
`scf.if` (a loop that may run no iterations); with an `else` region, the epilogue also
runs at its start. Nothing else moves: the loads and releases of the next tile happen
where they did. The planner does not plan it for a kernel that also reads a tensor it
stores (the loads of tile t + 1 would see the old values), nor with split decompositions
(`tile.arrive`), whose epilogue must finish before its ticket, nor where the first key
loop is not expanded in two stages (a GEMM's first MMA is in its K loop), nor where the
tile's first MMA is not where the rotation can follow it (`problem`). A schedule that says
`overlap` where the loop cannot be rotated (written by hand) is a located error, never
silently dropped: the schedule and `tawac explain` say only what the code does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.dialects import aref, hopper, tile
from tawac.support.diagnostics import CompileError

#: Operations without memory effects an epilogue may consist of, besides arith and math.
_PURE_TILE = (tile.BroadcastOp, tile.SplatOp, tile.DimOp)


def _pure(op: Operation) -> bool:
    if op.regions:
        return False
    if isinstance(op, _PURE_TILE):
        return True
    return op.name.startswith(("arith.", "math."))


def _contains(op: Operation, kind) -> bool:
    return any(isinstance(o, kind) for o in op.walk())


def _tile_loop(part: aref.PartitionOp) -> scf.ForOp | None:
    """The consumer's tile loop: a top-level loop over `hopper.cta_id` (`persistent`)."""
    for op in part.body.block.ops:
        if not isinstance(op, scf.ForOp):
            continue
        lb = op.lb.owner
        if isinstance(lb, hopper.CtaIdOp):
            return op
    return None


def _epilogue(body: Block) -> tuple[list[Operation], list[SSAValue]] | None:
    """The body's epilogue (its operations in body order) and the values it reads from
    the rest of the body (block arguments first), or None where the body has none that
    can move."""
    stores = [o for o in body.ops if isinstance(o, tile.StoreOp | tile.AtomicAddOp)]
    if not stores:
        return None
    ops: set[Operation] = set()
    carried: list[SSAValue] = []
    work: list[Operation] = list(stores)
    while work:
        op = work.pop()
        if op in ops:
            continue
        ops.add(op)
        for v in op.operands:
            if isinstance(v, BlockArgument):
                if v.block is body and v not in carried:
                    carried.append(v)
                continue
            assert isinstance(v, OpResult)
            if v.op.parent_block() is not body:
                continue  # defined before the loop
            if _pure(v.op):
                work.append(v.op)
            elif v not in carried:
                carried.append(v)
    order = [o for o in body.ops if o in ops]
    args = [v for v in carried if isinstance(v, BlockArgument)]
    return order, args + [v for v in carried if not isinstance(v, BlockArgument)]


def _first_dot(body: Block) -> tuple[tile.DotOp, scf.IfOp | None] | None:
    """The body's first MMA, and the `scf.if` whose `then` region holds it (None: the
    body's top level); None where it is in a loop or deeper."""
    for op in body.ops:
        if isinstance(op, tile.DotOp):
            return op, None
        if not _contains(op, tile.DotOp):
            continue
        if not isinstance(op, scf.IfOp):
            return None
        for inner in op.true_region.block.ops:
            if isinstance(inner, tile.DotOp):
                return inner, op
            if _contains(inner, tile.DotOp):
                return None
        return None
    return None


def _zero(t: Attribute) -> Operation:
    """A zero of type `t`: the initial value of a carried value, never read (the guard
    skips the epilogue before the first tile)."""
    if isinstance(t, TensorType):
        value = 0.0 if isinstance(t.element_type, AnyFloat) else 0
        return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value]), t)
    if isinstance(t, AnyFloat):
        return arith.ConstantOp(FloatAttr(0.0, t))
    if isinstance(t, IndexType):
        return arith.ConstantOp.from_int_and_width(0, t)
    assert isinstance(t, IntegerType)
    return arith.ConstantOp(IntegerAttr(0, t))


def _guarded(
    epilogue: list[Operation],
    mapping: dict[SSAValue, SSAValue],
    tile_index: SSAValue,
    total: SSAValue,
) -> list[Operation]:
    """The epilogue cloned with `mapping`, under `scf.if tile_index < total` (not before
    the first tile)."""
    cond = arith.CmpiOp(tile_index, total, "ult")
    inner = Block()
    values = dict(mapping)
    for op in epilogue:
        c = op.clone(value_mapper=values)
        inner.add_op(c)
    inner.add_op(scf.YieldOp())
    return [cond, scf.IfOp(cond.result, [], Region(inner))]


def problem(loop: scf.ForOp) -> str | None:
    """Why the tile loop `loop` cannot be rotated (module docstring), or None."""
    body = loop.body.block
    if _epilogue(body) is None:
        return "the consumer's tile loop stores nothing at its top level (no epilogue)"
    first = _first_dot(body)
    if first is None:
        return (
            "a tile's first MMA is neither at the top level of the consumer's tile loop nor "
            "in the `then` of a top-level scf.if (a GEMM's is in its K loop)"
        )
    _, branch = first
    if branch is not None and not branch.false_region.blocks:
        # a tile whose MMAs are skipped would skip the epilogue too
        return "the scf.if holding a tile's first MMA has no else region"
    return None


def rotate(loop: scf.ForOp) -> bool:
    """Rotate the tile loop `loop` (module docstring); False where it does not apply
    (`problem`)."""
    if problem(loop) is not None:
        return False
    body = loop.body.block
    found = _epilogue(body)
    assert found is not None
    epilogue, carried = found
    first = _first_dot(body)
    assert first is not None
    dot, branch = first
    iv = body.args[0]
    if iv not in carried:
        carried.insert(0, iv)
    # the new iteration arguments: the previous iteration's values of `carried`
    inits: list[SSAValue] = []
    for v in carried:
        if v is iv:
            inits.append(loop.ub)  # past the last tile: no previous tile
        elif isinstance(v, BlockArgument):
            inits.append(loop.iter_args[v.index - 1])
        else:
            z = _zero(v.type)
            Rewriter.insert_op(z, InsertPoint.before(loop))
            inits.append(z.results[0])
    prev = [body.insert_arg(v.type, len(body.args)) for v in carried]
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    Rewriter.replace_op(yield_op, scf.YieldOp(*yield_op.operands, *carried))
    inside = dict(zip(carried, prev, strict=True))
    ops = _guarded(epilogue, inside, inside[iv], loop.ub)
    Rewriter.insert_op(ops, InsertPoint.after(dot))
    if branch is not None:
        at = InsertPoint.at_start(branch.false_region.block)
        Rewriter.insert_op(_guarded(epilogue, inside, inside[iv], loop.ub), at)
    for op in reversed(epilogue):
        if isinstance(op, tile.StoreOp | tile.AtomicAddOp) or all(not r.uses for r in op.results):
            Rewriter.erase_op(op)
    # the loop with the new iteration arguments; after it, the last tile's epilogue
    n = len(loop.results)
    region = loop.detach_region(loop.body)
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, *inits], region)
    Rewriter.insert_op(new, InsertPoint.after(loop))
    for old, res in zip(loop.results, new.results[:n], strict=True):
        old.replace_all_uses_with(res)
    Rewriter.erase_op(loop)
    after = dict(zip(carried, new.results[n:], strict=True))
    Rewriter.insert_op(_guarded(epilogue, after, after[iv], new.ub), InsertPoint.after(new))
    return True


def apply_kernel(kernel: tile.KernelOp) -> None:
    """Rotate the consumer's tile loop where the schedule says `overlap` (the planner
    checked that the kernel has an epilogue to move: `overlaps_epilogue`); a schedule
    that says so where the loop cannot be rotated is a located error."""
    if not schedule.planned(kernel, "overlap-epilogue").overlap:
        return
    consumers = [
        p
        for p in kernel.body.block.ops
        if isinstance(p, aref.PartitionOp) and p.role.data == "consumer"
    ]
    if not consumers:
        raise _unapplied("the kernel has no consumer partition", kernel)
    for part in consumers:
        loop = _tile_loop(part)
        if loop is None:
            raise _unapplied("the consumer has no persistent tile loop (`tiles`)", part)
        why = problem(loop)
        if why is not None:
            raise _unapplied(why, loop)
        rotate(loop)


def _unapplied(why: str, op: Operation) -> CompileError:
    return CompileError(f"overlap-epilogue: the schedule plans overlap but {why}", op)


@dataclass(frozen=True)
class OverlapEpiloguePass(ModulePass):
    name = "overlap-epilogue"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            apply_kernel(kernel)
