"""`group-heads`: one program per group of query heads that share a K/V head (grouped
query attention, issue 23), as a rewrite of the tile program.  Runs first, before
`split-k` and `warp-specialize`; does nothing to a kernel whose heads it cannot group.

Input: a kernel whose program id `a` is a query head `h` used only
  * as the coordinate before the rows of 2-d tile loads and stores (Q, O) whose rows are
    `program_id(x') * BM` (the query block; that product used only there), and
  * through `h / G` (`arith.divui` / `arith.divsi` by one constant G that divides BM): the
    K/V head, in any op (the K/V loads).
Output: program id `a` numbers the groups, each program takes `BM / G` query rows of each
of the group's G heads, stacked as the rows of one tile:

    %g = tile.program_id y                   (the group: the K/V head)
    %h0 = arith.muli %g, G                   (its first query head)
    %m0 = arith.muli %pid_m, BM / G           (rows per head)
    %q = tile.load %q[%b, %h0, %m0, %c0] stack G : ... -> tensor<BMx...>
    ... %kvh is %g ...
    tile.store %o, %o[%b, %h0, %m0, %c0] stack G : ...

so each K/V block is loaded once per group instead of once per query head, and a decode
step's few query rows fill the MMA's rows (8 heads x 8 rows of a 64-row tile instead of
1 row of 64).  The softmax is per row, so rows of other heads in one tile change nothing.
The grid follows from the stores (`infer_grid`): heads / G groups, query rows / (BM / G)
blocks.  Any other use of `h` or of the query block (a causal mask's row positions, a
per-head scalar) keeps the kernel as it is; `tawac.group_heads` records the decision
(`explain`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import CHECKS_ATTR, GROUP_ATTR, checks_of, to_attr
from tawac.analysis.identity import argument_name
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile


@dataclass
class _Grouping:
    head: tile.ProgramIdOp
    group: int
    divs: list[Operation]
    accesses: list[tile.LoadOp | tile.StoreOp]
    blocks: list[arith.MuliOp]
    rows: int


def _access_of(op: Operation, value: SSAValue) -> bool:
    """Whether `op` is a 2-d tile load or store that reads `value` only as the coordinate
    before its rows."""
    if not isinstance(op, tile.LoadOp | tile.StoreOp) or tile.stack_of(op) > 1:
        return False
    t = op.result.type if isinstance(op, tile.LoadOp) else op.value.type
    idx = list(op.indices)
    if not isinstance(t, TensorType) or t.get_num_dims() != 2 or len(idx) < 3:
        return False
    if isinstance(op, tile.StoreOp) and op.bounds:
        return False
    return idx[-3] is value and all(i is not value for i in idx[:-3] + idx[-2:])


def _block_rows(
    accesses: list[tile.LoadOp | tile.StoreOp],
) -> tuple[list[arith.MuliOp], int] | None:
    """The query block's products `program_id * BM` the accesses take their rows from
    (one, or one per access as a converted Triton kernel computes them: the same program
    id and BM, each in the kernel's body), in program order, and BM (each access a tile
    of BM rows), where those products are read by the accesses only."""
    muls: list[arith.MuliOp] = []
    for a in accesses:
        mul = a.indices[-2].owner
        if not isinstance(mul, arith.MuliOp) or not isinstance(mul.lhs.owner, tile.ProgramIdOp):
            return None
        if mul not in muls:
            muls.append(mul)
    if len({m.lhs for m in muls}) != 1 or len({constant_int(m.rhs) for m in muls}) != 1:
        return None
    bm = constant_int(muls[0].rhs)
    if bm is None:
        return None
    body = muls[0].lhs.owner.parent_block()
    if any(m.parent_block() is not body for m in muls):
        return None
    if any(u.operation not in accesses for m in muls for u in m.result.uses):
        return None
    for a in accesses:
        t = a.result.type if isinstance(a, tile.LoadOp) else a.value.type
        assert isinstance(t, TensorType)
        if t.get_shape()[0] != bm:
            return None
    assert body is not None
    return sorted(muls, key=body.get_operation_index), bm


def _grouping(kernel: tile.KernelOp, head: tile.ProgramIdOp) -> _Grouping | None:
    """How program id `head` groups, or None where it does not (the module docstring)."""
    divs: list[Operation] = []
    accesses: list[tile.LoadOp | tile.StoreOp] = []
    groups: set[int] = set()
    for use in head.result.uses:
        op = use.operation
        if isinstance(op, arith.DivUIOp | arith.DivSIOp) and op.lhs is head.result:
            g = constant_int(op.rhs)
            if g is None or g < 2:
                return None
            groups.add(g)
            divs.append(op)
        elif _access_of(op, head.result):
            assert isinstance(op, tile.LoadOp | tile.StoreOp)
            accesses.append(op)
        else:
            return None
    if len(groups) != 1 or not accesses:
        return None
    (g,) = groups
    found = _block_rows(accesses)
    if found is None:
        return None
    muls, bm = found
    if bm % g:
        return None
    return _Grouping(head, g, divs, accesses, muls, bm)


def group_kernel(kernel: tile.KernelOp) -> bool:
    """Groups the query heads of `kernel` where it can (the module docstring); whether it
    did."""
    for head in [o for o in kernel.walk() if isinstance(o, tile.ProgramIdOp)]:
        found = _grouping(kernel, head)
        if found is None:
            continue
        checks = _checks(kernel, found)
        _rewrite(found)
        kernel.attributes[GROUP_ATTR] = to_attr(
            {"group": found.group, "rows_per_head": found.rows // found.group}
        )
        if checks:
            stated = checks_of(kernel)  # the source's own come first
            kernel.attributes[CHECKS_ATTR] = to_attr(
                stated + [c for c in checks if c not in stated]
            )
        return True
    return False


def _checks(kernel: tile.KernelOp, g: _Grouping) -> list[dict]:
    """The launch checks the grouping states (the sidecar's "checks"): each query-head
    tensor (the grouped loads' and stores') has G times the heads of each tensor read at
    `h / G`. A launch with other shapes (the G of another model) is refused instead of
    reading K/V heads that are not there."""
    heads: list[tuple[BlockArgument, int]] = []
    for a in g.accesses:
        t = a.source if isinstance(a, tile.LoadOp) else a.dest
        gt = t.type
        if isinstance(t, BlockArgument) and isinstance(gt, tile.GlobalTensorType):
            heads.append((t, gt.rank - 3))
    shared: list[tuple[BlockArgument, int]] = []
    for div in g.divs:
        for use in div.results[0].uses:
            op = use.operation
            if not isinstance(op, tile.LoadOp) or not isinstance(op.source, BlockArgument):
                continue
            shared.append((op.source, list(op.indices).index(div.results[0])))

    def ordered(refs: list[tuple[BlockArgument, int]]) -> list[tuple[str, int]]:
        """Distinct (argument name, dimension), in argument order."""
        return [
            (argument_name(v, kernel), d)
            for v, d in sorted(set(refs), key=lambda x: (x[0].index, x[1]))
        ]

    return [
        {"arg": arg, "dim": dim, "equals": {"arg": other, "dim": d, "times": g.group}}
        for arg, dim in ordered(heads)
        for other, d in ordered(shared)
    ]


def _rewrite(g: _Grouping) -> None:
    idx = IndexType()
    group = g.head.result
    size = arith.ConstantOp.from_int_and_width(g.group, idx)
    first = arith.MuliOp(group, size.result)
    first.result.name_hint = "head0"
    Rewriter.insert_op([size, first], InsertPoint.after(g.head))
    per = arith.ConstantOp.from_int_and_width(g.rows // g.group, idx)
    per.result.name_hint = "rows_per_head"
    block = g.blocks[0]
    rows = arith.MuliOp(block.lhs, per.result)
    rows.result.name_hint = block.result.name_hint
    Rewriter.insert_op([per, rows], InsertPoint.before(block))
    for div in g.divs:
        divisor = div.operands[1].owner
        div.results[0].replace_all_uses_with(group)
        Rewriter.erase_op(div)
        if isinstance(divisor, arith.ConstantOp) and not divisor.result.uses:
            Rewriter.erase_op(divisor)
    for a in g.accesses:
        coords = list(a.indices)
        coords[-3], coords[-2] = first.result, rows.result
        if isinstance(a, tile.LoadOp):
            new: Operation = tile.LoadOp(a.source, coords, a.result.type, g.group)
        else:
            new = tile.StoreOp(a.value, a.dest, coords, stack=g.group)
        new.attributes |= a.attributes
        new.location = a.location
        Rewriter.replace_op(a, new)
    for b in g.blocks:
        Rewriter.erase_op(b)


@dataclass(frozen=True)
class GroupHeadsPass(ModulePass):
    name = "group-heads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            group_kernel(kernel)
