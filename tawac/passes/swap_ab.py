"""`swap-ab`: a GEMM's tile computed transposed, C^T = B A^T, so that the tile's few
rows (a decode step's tokens) become wgmma's N (8 to 256 in steps of 8, PTX ISA
9.7.15.5) and its many columns (the weights' rows) wgmma's M. A tile of 16 tokens then
issues m64n16 MMAs on 64 weight rows, where the plain tile fills a 64-row MMA with 48
rows of zeros. The work decomposition "swap-AB" of the `swap_ab` knob (per size in the
tuning tables); runs first, before `split-k` (which it excludes) and `widen` (which
finds nothing to widen in the swapped tile).

Input: a kernel with one `tile.dot` `acc + x y^T` (`transpose_rhs`: both operands
K-major, x the BM x BK tile of A, y the BN x BK tile of B) in an `scf.for` that carries
the accumulator from a splat constant; after the loop the accumulator reaches one
unbounded, unstacked `tile.store` through elementwise `arith` / `math` ops, each with
that value as its one tensor operand besides splat constants (a conversion, a scale).

Output: `accT + y x^T` (BN x BM) carried by the loop, the epilogue's ops on the
transposed tiles, and the store marked `transposed`: `convert-to-ptx` writes element
(i, j) of the tile to (row j, column i) of the block, from registers. The operands' loads
are unchanged. `tawac.decomposition` records `{"kind": "swap_ab"}` (`explain`).

Anything else is one located error naming what stands in the way.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import DECOMPOSITION_ATTR, to_attr
from tawac.dialects import tile
from tawac.support.diagnostics import CompileError


@dataclass
class Swap:
    """What `analyse` found: the dot, its loop and carried position, the epilogue's ops
    from the loop's result to the store."""

    dot: tile.DotOp
    loop: scf.ForOp
    carried: int
    epilogue: list[Operation]
    store: tile.StoreOp


def _splat(v: SSAValue) -> arith.ConstantOp | None:
    """The op of a splat tensor constant, else None."""
    op = v.owner
    if not isinstance(op, arith.ConstantOp):
        return None
    value = op.value
    if not isinstance(value, DenseIntOrFPElementsAttr) or not value.is_splat():
        return None
    return op


def _elementwise(op: Operation, v: SSAValue) -> bool:
    """`op` is an `arith` / `math` op with one tensor result, whose tensor operands are
    `v` (once) and splat constants."""
    if not op.name.startswith(("arith.", "math.")) or len(op.results) != 1:
        return False
    if not isinstance(op.results[0].type, TensorType):
        return False
    others = [o for o in op.operands if o is not v and isinstance(o.type, TensorType)]
    return list(op.operands).count(v) == 1 and all(_splat(o) is not None for o in others)


def analyse(kernel: tile.KernelOp) -> Swap | tuple[str, Operation]:
    """The swap of `kernel` (module docstring), or why not and where."""
    dots = [o for o in kernel.walk() if isinstance(o, tile.DotOp)]
    if len(dots) != 1:
        return f"needs exactly one tile.dot, the kernel has {len(dots)}", kernel
    dot = dots[0]
    if dot.transpose_lhs is not None or dot.transpose_rhs is None:
        return "needs the dot's operands both K-major (x times y transposed)", dot
    loop = dot.parent_op()
    acc = dot.acc
    if not isinstance(loop, scf.ForOp) or not isinstance(acc, BlockArgument):
        return "needs the dot's accumulator carried by its scf.for", dot
    if acc.owner is not loop.body.block or acc.index == 0 or len(list(acc.uses)) != 1:
        return "needs the dot's accumulator carried by its scf.for", dot
    carried = acc.index - 1
    yielded = loop.body.block.last_op
    if not isinstance(yielded, scf.YieldOp) or yielded.operands[carried] is not dot.result:
        return "needs the loop to carry the dot's result", dot
    if len(list(dot.result.uses)) != 1 or _splat(loop.iter_args[carried]) is None:
        return "needs the accumulator to start from a constant and feed only the next step", dot
    epilogue: list[Operation] = []
    v = loop.results[carried]
    while True:
        users = [u.operation for u in v.uses]
        if len(users) != 1:
            return f"needs the accumulator to reach one store ({len(users)} uses)", loop
        op = users[0]
        if isinstance(op, tile.StoreOp):
            if op.value is not v or op.bounds or op.stack is not None:
                return "needs an unbounded, unstacked store of the tile", op
            return Swap(dot, loop, carried, epilogue, op)
        if not _elementwise(op, v):
            return (
                "handles an epilogue of elementwise ops on the accumulator and splat "
                f"constants only, not this {op.name}"
            ), op
        epilogue.append(op)
        v = op.results[0]


def _transposed(t: TensorType) -> TensorType:
    rows, cols = t.get_shape()
    return TensorType(t.element_type, [cols, rows])


def _retype_splat(const: arith.ConstantOp, user: Operation) -> None:
    """`user`'s operands from `const` replaced by a transposed splat of its own."""
    t = const.result.type
    assert isinstance(t, TensorType)
    value = const.value
    assert isinstance(value, DenseIntOrFPElementsAttr)
    new_t = _transposed(t)
    first = next(iter(value.get_values()))
    new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(new_t, [first]), new_t)
    new.result.name_hint = const.result.name_hint
    Rewriter.insert_op(new, InsertPoint.before(user))
    for i, o in enumerate(user.operands):
        if o is const.result:
            user.operands[i] = new.result
    if not const.result.uses:
        Rewriter.erase_op(const)


def rewrite(kernel: tile.KernelOp, s: Swap) -> None:
    """`kernel` with its tile computed transposed (module docstring)."""
    acc_t = s.dot.result.type
    assert isinstance(acc_t, TensorType)
    init = _splat(s.loop.iter_args[s.carried])
    assert init is not None
    _retype_splat(init, s.loop)
    body: Block = s.loop.body.block
    Rewriter.replace_value_with_new_type(body.args[s.carried + 1], _transposed(acc_t))
    swapped = tile.DotOp(s.dot.rhs, s.dot.lhs, body.args[s.carried + 1], transpose_rhs=True)
    Rewriter.replace_op(s.dot, swapped)
    Rewriter.replace_value_with_new_type(s.loop.results[s.carried], _transposed(acc_t))
    for op in s.epilogue:
        for o in list(op.operands):
            const = _splat(o)
            if const is not None:
                _retype_splat(const, op)
        t = op.results[0].type
        assert isinstance(t, TensorType)
        Rewriter.replace_value_with_new_type(op.results[0], _transposed(t))
    s.store.properties["transposed"] = UnitAttr()
    kernel.attributes[DECOMPOSITION_ATTR] = to_attr({"kind": "swap_ab"})


@dataclass(frozen=True)
class SwapAbPass(ModulePass):
    name = "swap-ab"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            found = analyse(kernel)
            if isinstance(found, tuple):
                why, where = found
                raise CompileError(f"swap-ab: {why}", where)
            rewrite(kernel, found)


__all__ = ["Swap", "SwapAbPass", "analyse", "rewrite"]
