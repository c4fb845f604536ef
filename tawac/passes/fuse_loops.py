"""`fuse-loops`: two loops one after the other that stream the same tiles become one loop
whose differing math is an `scf.if` on the iteration.

Causal attention written as Triton's tutorial writes it has two key loops: the blocks
left of the diagonal (no mask) over `[0, m0)`, then the diagonal block (masked) over
`[m0, m0 + BLOCK)`, the second loop carrying on the first's results. Each loop load K
and V and issues the same two MMAs; only the softmax between them differs. As two
loops, the software pipeline drains at the boundary once per tile (measured: 3-6% of
the kernel beside tawac's one-loop causal example). Fused, the loop runs over
`[lb1, ub2)`, and the bodies' common head (the loads and the first MMA) and common tail
(the last MMA, the yield) stay outside an `scf.if %iv < ub1` whose branches are the two
middles: the structure of `examples/attention_causal.mlir`.

Input: a `tile.kernel` without partitions. Two loops `L1; L2` of one block fuse when:
- nothing between them depends on `L1` (pure index arithmetic, hoisted above `L1`), and
  `L1`'s results are used only as `L2`'s initial values, in order;
- both step by the same constant, `L2`'s lower bound is `L1`'s upper bound (equal
  computations), and `L1` runs a whole number of steps from a lower bound of 0 (its
  bounds are multiples of the step: constants or products with such a constant);
- the bodies share a head and a tail of equal ops (same op, attributes and types;
  operands equal outside the loops, or corresponding inside), and their middles hold no
  `tile.load` and no `tile.dot` (those stay where the producer and the pipeline see
  them).
The fused loop's `scf.if` yields, per value the tail reads from the middles, the first
body's value in its `then` branch and the second's in its `else`. Loops that do not
qualify are left as they are.

Measured (H100, 2026-11-26, docs/perf.md): on the tutorial's causal attention the fused
loop ran 3-6% slower than its two loops sharing their rings (`warp-specialize`): the
tutorial's two stages order their softmax differently, so the `scf.if` holds the row
maxima and the scaling, which the schedule then cannot interleave. So the pass is not
in the default path (`tawac opt -p fuse-loops` runs it); it would pay where the middles
are small (a mask, as in `examples/attention_causal.mlir`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tawac.analysis.scalars import constant_int, multiple_of
from tawac.dialects import tile


def _same_value(a: SSAValue, b: SSAValue, depth: int = 0) -> bool:
    """Equal computations of index values outside the loops (constants by value)."""
    if a is b:
        return True
    ca, cb = constant_int(a), constant_int(b)
    if ca is not None or cb is not None:
        return ca == cb
    oa, ob = a.owner, b.owner
    if depth > 20 or not isinstance(oa, Operation) or not isinstance(ob, Operation):
        return False
    if oa.name != ob.name or oa.properties != ob.properties or len(oa.operands) != len(ob.operands):
        return False
    if not isinstance(
        oa, arith.AddiOp | arith.MuliOp | arith.SubiOp | tile.ProgramIdOp | tile.DimOp
    ):
        return False
    return all(_same_value(x, y, depth + 1) for x, y in zip(oa.operands, ob.operands, strict=True))


def _alike(o1: Operation, o2: Operation) -> bool:
    """The same op up to its operands: name, properties, attributes, result types, no
    regions, as many operands."""
    return (
        o1.name == o2.name
        and o1.properties == o2.properties
        and o1.attributes == o2.attributes
        and [r.type for r in o1.results] == [r.type for r in o2.results]
        and not o1.regions
        and not o2.regions
        and len(o1.operands) == len(o2.operands)
    )


def _same_head_op(o1: Operation, o2: Operation, to1: dict, defined2: set[SSAValue]) -> bool:
    """`o2` computes what `o1` does: alike, its operands mapped by `to1` or equal outside
    the bodies (none from the other body's ops not yet matched)."""
    if not _alike(o1, o2):
        return False
    for a1, a2 in zip(o1.operands, o2.operands, strict=True):
        if a2 in to1:
            if to1[a2] is not a1:
                return False
        elif a2 in defined2 or not (a1 is a2 or _same_value(a1, a2)):
            return False
    return True


def _head(b1: Block, b2: Block, to1: dict) -> int:
    """The number of leading ops the two bodies share."""
    ops1, ops2 = list(b1.ops)[:-1], list(b2.ops)[:-1]
    defined2 = {r for o in ops2 for r in o.results}
    n = 0
    while n < min(len(ops1), len(ops2)) and _same_head_op(ops1[n], ops2[n], to1, defined2):
        to1.update(zip(ops2[n].results, ops1[n].results, strict=True))
        defined2 -= set(ops2[n].results)
        n += 1
    return n


def _tail(
    b1: Block, b2: Block, head: int, to1: dict
) -> tuple[int, list[tuple[SSAValue, SSAValue]]]:
    """The number of trailing ops (before the yields) the bodies share after the head,
    and the values (body 2's, body 1's) the tail reads from the middles."""
    ops1, ops2 = list(b1.ops)[head:-1], list(b2.ops)[head:-1]
    y1, y2 = b1.last_op, b2.last_op
    pending: dict[SSAValue, SSAValue] = {}
    tail_map: dict[SSAValue, SSAValue] = {}

    def pair(a2: SSAValue, a1: SSAValue) -> bool:
        if a2 in tail_map:
            return tail_map[a2] is a1
        if a2 in to1:
            return to1[a2] is a1
        if a2 in pending:
            return pending[a2] is a1
        pending[a2] = a1
        return True

    if len(y1.operands) != len(y2.operands):
        return 0, []
    if not all(pair(a2, a1) for a1, a2 in zip(y1.operands, y2.operands, strict=True)):
        return 0, []
    n = 0
    while n < min(len(ops1), len(ops2)):
        o1, o2 = ops1[-1 - n], ops2[-1 - n]
        if not _alike(o1, o2):
            break
        if any(
            pending.get(r2, r1) is not r1 for r1, r2 in zip(o1.results, o2.results, strict=True)
        ):
            break  # its results are read where the other body reads other values
        saved = dict(pending)
        for r1, r2 in zip(o1.results, o2.results, strict=True):
            pending.pop(r2, None)
            tail_map[r2] = r1
        ok = True
        for a1, a2 in zip(o1.operands, o2.operands, strict=True):
            inside = a2 in to1 or isinstance(a2.owner, Operation) and a2.owner.parent_block() is b2
            inside = inside or (isinstance(a2, BlockArgument) and a2.owner is b2)
            if inside:
                ok = ok and pair(a2, a1)
            elif not (a1 is a2 or _same_value(a1, a2)):
                ok = False
        if not ok:
            for r2 in o2.results:
                tail_map.pop(r2, None)
            pending.clear()
            pending.update(saved)
            break
        n += 1
    return n, list(pending.items())


def _fusable(l1: scf.ForOp, l2: scf.ForOp) -> bool:
    step1, step2 = constant_int(l1.step), constant_int(l2.step)
    if step1 is None or step1 != step2 or step1 <= 0:
        return False
    if constant_int(l1.lb) != 0 or not multiple_of(l1.ub, step1) or not _same_value(l1.ub, l2.lb):
        return False
    if list(l2.iter_args) != list(l1.results):
        return False
    return all(len(list(r.uses)) == 1 for r in l1.results)


def fuse(l1: scf.ForOp, l2: scf.ForOp) -> scf.ForOp | None:
    """The fused loop replacing `l1; l2` (module docstring), or None (left as they are)."""
    if not _fusable(l1, l2):
        return None
    b1, b2 = l1.body.block, l2.body.block
    to1: dict[SSAValue, SSAValue] = dict(zip(b2.args, b1.args, strict=True))
    head = _head(b1, b2, to1)
    tail, reads = _tail(b1, b2, head, to1)
    ops1, ops2 = list(b1.ops)[:-1], list(b2.ops)[:-1]
    mid1 = ops1[head : len(ops1) - tail]
    mid2 = ops2[head : len(ops2) - tail]
    if any(isinstance(o, tile.LoadOp | tile.DotOp) for o in [*mid1, *mid2]):
        return None
    if not any(isinstance(o, tile.DotOp) for o in ops1[:head]):
        return None  # nothing the fused loop would stream in its common part
    body = Block(arg_types=[a.type for a in b1.args])
    m1: dict[SSAValue, SSAValue] = dict(zip(b1.args, body.args, strict=True))
    for op in ops1[:head]:
        body.add_op(op.clone(m1))
    m2: dict[SSAValue, SSAValue] = {v2: m1[v1] for v2, v1 in to1.items() if v1 in m1}
    cond = arith.CmpiOp(body.args[0], l1.ub, "ult")
    then, other = Block(), Block()
    for op in mid1:
        then.add_op(op.clone(m1))
    for op in mid2:
        other.add_op(op.clone(m2))
    then.add_op(scf.YieldOp(*[m1.get(v1, v1) for _, v1 in reads]))
    other.add_op(scf.YieldOp(*[m2.get(v2, v2) for v2, _ in reads]))
    branch = scf.IfOp(cond.result, [v1.type for _, v1 in reads], Region(then), Region(other))
    body.add_ops([cond, branch])
    for (_, v1), r in zip(reads, branch.results, strict=True):
        m1[v1] = r
    for op in ops1[len(ops1) - tail :]:
        body.add_op(op.clone(m1))
    body.add_op(scf.YieldOp(*[m1.get(v, v) for v in b1.last_op.operands]))
    return scf.ForOp(l1.lb, l2.ub, l1.step, list(l1.iter_args), Region(body))


def fuse_loops(kernel: tile.KernelOp) -> int:
    """Fuses every qualifying pair of adjacent loops of the kernel's body; the count."""
    done = 0
    block = kernel.body.block
    changed = True
    while changed:
        changed = False
        loops = [o for o in block.ops if isinstance(o, scf.ForOp)]
        for l1, l2 in zip(loops, loops[1:], strict=False):
            between = []
            op = l1.next_op
            while op is not None and op is not l2:
                between.append(op)
                op = op.next_op
            if any(o.regions or any(_depends(x, l1) for x in o.operands) for o in between):
                continue
            fused = fuse(l1, l2)
            if fused is None:
                continue
            for o in between:  # the second loop's bounds, computed before the fused loop
                o.detach()
                block.insert_op_before(o, l1)
            block.insert_op_before(fused, l2)
            for old, new in zip(l2.results, fused.results, strict=True):
                old.replace_all_uses_with(new)
            l2.detach()
            l2.erase()
            l1.detach()
            l1.erase(safe_erase=False)
            done += 1
            changed = True
            break
    return done


def _depends(v: SSAValue, loop: scf.ForOp) -> bool:
    """`v` is computed from `loop`'s results (within the same block)."""
    work, seen = [v], set()
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in loop.results:
            return True
        if isinstance(x.owner, Operation) and x.owner.parent_block() is loop.parent_block():
            work.extend(x.owner.operands)
    return False


@dataclass(frozen=True)
class FuseLoopsPass(ModulePass):
    name = "fuse-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for k in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            fuse_loops(k)


__all__ = ["FuseLoopsPass", "fuse", "fuse_loops"]
