"""`group-heads`: one program per group of query heads that share a K/V head (grouped
query attention), as a rewrite of the tile program.  Runs first, before
`split-k` and `warp-specialize`; does nothing to a kernel whose heads it cannot group.

Input: a kernel whose program id `a` is a query head `h` (every `tile.program_id a` of
the kernel) used only
  * as the coordinate before the rows of 2-d tile loads and stores (Q, O) whose rows are
    `program_id(x') * BM` (the query block), and
  * through `h / G` (`arith.divui` / `arith.divsi` by one constant G): the K/V head, in
    any op (the K/V loads),
and whose query block (every `tile.program_id x'`) is used only through products
`program_id(x') * BM` (one, or one per use as a converted Triton kernel computes them),
each used only as the rows' coordinate of those loads and stores.  These are the
coordinates the rewrite changes consistently; any other value that depends on `h` or on
the query block keeps the kernel as it is, since it would see the wrong head or row
positions once heads are stacked: a causal mask's row positions (`tile.iota 0` from the
query block's first row) or a causal key loop's end at `m0 + BM` are one head's rows,
which no new offset can give back to G stacked heads; a per-head scalar is one head's; a
tile added with `tile.atomic_add` would add G heads' rows where it added one head's.
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
1 row of 64).  The softmax is per row, so rows of other heads in one tile change nothing;
that the rows are independent is assumed, not checked (a reduction across the Q tile's
rows, or a row iota that does not come from the query block, would see stacked heads).
The grid follows from the stores (`infer_grid`): heads / G groups, query rows / (BM / G)
blocks.

The decision (`tawac.schedule.group_heads`): the whole group where the grouping is legal
(`analyse`) and G divides BM.  `tawac.group_heads` records a grouping; a grouped-query
kernel (a program id both the Q/O head and divided) kept as it is records why in
`tawac.group_heads_kept` (both shown by `explain`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import GROUP_ATTR, record_checks, to_attr
from tawac.analysis.identity import argument_name
from tawac.analysis.program_ids import program_id_ops
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile
from tawac.schedule import group_heads as rule

KEPT_ATTR = "tawac.group_heads_kept"
"""The kernel attribute saying why a grouped-query kernel keeps one program per query
head (a string; `explain`)."""

_AXES = "xyz"


@dataclass
class _Grouping:
    heads: list[tile.ProgramIdOp]  # every program id of the head's axis
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
    return idx[-3] is value and sum(o is value for o in op.operands) == 1


def _names(ops: list[Operation]) -> str:
    return ", ".join(sorted({o.name for o in ops}))


def _head_uses(
    kernel: tile.KernelOp, axis: int
) -> tuple[int, list[Operation], list[tile.LoadOp | tile.StoreOp]] | str:
    """G, the `h / G` ops and the Q/O accesses of program id `axis` taken as the query
    head `h` (every `tile.program_id` of that axis), or why it is not one."""
    divs: list[Operation] = []
    accesses: list[tile.LoadOp | tile.StoreOp] = []
    other: list[Operation] = []
    groups: set[int | None] = set()
    for head in program_id_ops(kernel, axis):
        for use in head.result.uses:
            op = use.operation
            if isinstance(op, arith.DivUIOp | arith.DivSIOp) and op.lhs is head.result:
                groups.add(constant_int(op.rhs))
                divs.append(op)
            elif _access_of(op, head.result):
                assert isinstance(op, tile.LoadOp | tile.StoreOp)
                accesses.append(op)
            else:
                other.append(op)
    what = f"the query head (program id {_AXES[axis]})"
    if other:
        return f"{what} is used by {_names(other)}, not only as h / G and the Q/O head"
    if None in groups:
        return f"{what} is divided by a value that is not a constant"
    if len(groups) != 1:
        return f"{what} is divided by several group sizes {sorted(g for g in groups if g)}"
    (g,) = groups
    assert g is not None
    if g < 2:
        return f"{what} is divided by {g}"
    if not accesses:
        return f"no 2-d tile is loaded or stored at {what}"
    return g, divs, accesses


def _block_rows(
    kernel: tile.KernelOp, head_axis: int, accesses: list[tile.LoadOp | tile.StoreOp]
) -> tuple[list[arith.MuliOp], int] | str:
    """The query block's products `program_id * BM` the accesses take their rows from
    (one, or one per access as a converted Triton kernel computes them), in program
    order, and BM (each access a tile of BM rows), or why there are none the rewrite can
    change: every `tile.program_id` of the query block's axis must be used only through
    such products, and those only as the rows' coordinate of the accesses (a causal
    mask's row positions or a key loop's end at the query block stay one head's rows)."""
    muls: list[arith.MuliOp] = []
    for a in accesses:
        mul = a.indices[-2].owner
        if not isinstance(mul, arith.MuliOp) or not isinstance(mul.lhs.owner, tile.ProgramIdOp):
            return "the Q/O tiles' rows are not a program id times a block size"
        if mul not in muls:
            muls.append(mul)
    axes = {m.lhs.owner.axis.data for m in muls}  # type: ignore[union-attr]
    sizes = {constant_int(m.rhs) for m in muls}
    if len(axes) != 1 or len(sizes) != 1 or head_axis in axes:
        return "the Q/O tiles' rows are not one program id times one block size"
    (axis,), (bm,) = axes, sizes
    if bm is None:
        return "the Q/O tiles' rows are a program id times a value that is not a constant"
    body = kernel.body.block
    if any(m.parent_block() is not body for m in muls):
        return "the Q/O tiles' rows are computed inside a region"
    what = f"the query block (program id {_AXES[axis]})"
    other: list[Operation] = []
    for pid in program_id_ops(kernel, axis):
        for use in pid.result.uses:
            op = use.operation
            if isinstance(op, arith.MuliOp) and op.lhs is pid.result and op.rhs is not op.lhs:
                if constant_int(op.rhs) == bm:
                    if op not in muls:
                        muls.append(op)  # another product: its uses are checked below
                    continue
            other.append(op)
    if other:
        return f"{what} is used by {_names(other)}, not only as the Q/O tiles' rows"
    for m in muls:
        for use in m.result.uses:
            op = use.operation
            placed = op in accesses and sum(o is m.result for o in op.operands) == 1
            if not placed or op.indices[-2] is not m.result:  # type: ignore[union-attr]
                other.append(op)
    if other:
        return (
            f"{what}'s first row is used by {_names(other)}, not only as the Q/O tiles' rows "
            "(one head's row positions: stacked heads would change them)"
        )
    for a in accesses:
        t = a.result.type if isinstance(a, tile.LoadOp) else a.value.type
        assert isinstance(t, TensorType)
        if t.get_shape()[0] != bm:
            return f"a Q/O tile has {t.get_shape()[0]} rows, not the block's {bm}"
    # a product in a region is used by no access (the accesses' are the body's): dead
    return sorted([m for m in muls if m.parent_block() is body], key=body.get_operation_index), bm


def analyse(kernel: tile.KernelOp) -> _Grouping | str | None:
    """How the query heads of `kernel` group (the module docstring), why they do not
    (a grouped-query kernel: a program id both the head of Q/O tiles and divided, `h /
    G`), or None (no such kernel)."""
    why: str | None = None
    for axis in range(3):
        uses = [(h, u.operation) for h in program_id_ops(kernel, axis) for u in h.result.uses]
        if not any(
            isinstance(op, arith.DivUIOp | arith.DivSIOp) and op.lhs is h.result for h, op in uses
        ) or not any(_access_of(op, h.result) for h, op in uses):
            continue  # not a query head (Q/O at h) with a K/V head (h / G)
        found = _head_uses(kernel, axis)
        if isinstance(found, str):
            why = why or found
            continue
        g, divs, accesses = found
        if any(isinstance(o, tile.AtomicAddOp) for o in kernel.walk()):
            # a tile added atomically would hold G heads' rows where it held one head's
            why = why or "the kernel adds tiles atomically (tile.atomic_add)"
            continue
        rows = _block_rows(kernel, axis, accesses)
        if isinstance(rows, str):
            why = why or rows
            continue
        muls, bm = rows
        return _Grouping(program_id_ops(kernel, axis), g, divs, accesses, muls, bm)
    return why


def group_kernel(kernel: tile.KernelOp) -> bool:
    """Groups the query heads of `kernel` where the rule says so and the rewrite is legal
    (the module docstring); whether it did. A grouped-query kernel kept as it is says why
    (`KEPT_ATTR`)."""
    found = analyse(kernel)
    if found is None:
        return False
    why = found if isinstance(found, str) else rule.why_not(found.group, found.rows)
    if why is not None:
        kernel.attributes[KEPT_ATTR] = StringAttr(why)
        return False
    assert not isinstance(found, str)
    group = rule.heads_per_program(found.group, found.rows)
    checks = _checks(kernel, found)
    _rewrite(found)
    kernel.attributes[GROUP_ATTR] = to_attr({"group": group, "rows_per_head": found.rows // group})
    record_checks(kernel, checks)  # after the source's own
    return True


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
    first: dict[SSAValue, SSAValue] = {}  # each program id of the head's axis -> h0 = it * G
    for head in g.heads:
        if not any(u.operation in g.accesses for u in head.result.uses):
            continue
        size = arith.ConstantOp.from_int_and_width(g.group, idx)
        h0 = arith.MuliOp(head.result, size.result)
        h0.result.name_hint = "head0"
        Rewriter.insert_op([size, h0], InsertPoint.after(head))
        first[head.result] = h0.result
    per = arith.ConstantOp.from_int_and_width(g.rows // g.group, idx)
    per.result.name_hint = "rows_per_head"
    block = g.blocks[0]
    rows = arith.MuliOp(block.lhs, per.result)
    rows.result.name_hint = block.result.name_hint
    Rewriter.insert_op([per, rows], InsertPoint.before(block))
    for div in g.divs:
        divisor = div.operands[1].owner
        div.results[0].replace_all_uses_with(div.operands[0])
        Rewriter.erase_op(div)
        if isinstance(divisor, arith.ConstantOp) and not divisor.result.uses:
            Rewriter.erase_op(divisor)
    for a in g.accesses:
        coords = list(a.indices)
        coords[-3], coords[-2] = first[coords[-3]], rows.result
        if isinstance(a, tile.LoadOp):
            pad = a.padding.data if a.padding is not None else None
            new: Operation = tile.LoadOp(a.source, coords, a.result.type, g.group, pad)
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
