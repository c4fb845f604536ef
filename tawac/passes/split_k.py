"""`split-k{splits=S}` and `split-k{stream=S}`: split-K and stream-K, work decompositions,
as rewrites of the tile program.  Runs first, before `warp-specialize`, when
a decomposition splits (splits > 1 or stream > 0).  Of a loop with an online softmax
(attention), `splits=S` splits the keys instead (flash-decoding: `_split_keys`,
below the GEMM forms): S programs per query tile along x, each storing its partial
(O, m, l) where the output goes, the last one combining them (`tile.split_softmax`), in
two levels from 16 splits.

Input: a `tile.kernel` whose body has one loop that adds `tile.dot` products into a tile
that starts at zero (a GEMM's K loop), followed by its epilogue.  Output: the same kernel
over a grid with S times the programs, along program id z:

    %z = tile.program_id z                      (split z of S)
    %acc = scf.for %k = lb' to ub' step ...      (the z-th of S chunks of whole steps)
    tile.store %acc, %partials[%z, %i, %j]      (the f32 partial tile, straight from
                                                 registers)
    %last = tile.arrive %tickets[%px, %py] count S
    scf.if %last {
      %sum = tile.split_sum %partials[0, %i, %j] count S
      ... the epilogue, reading %sum where it read %acc ...
    }

Every program of one output tile writes its partial sum and arrives at the tile's ticket;
the one that arrives last adds the S partials in split order (0, 1, ..., S - 1, so the
result has the same bits whichever program is last: deterministic) and runs the epilogue.
No program waits for another, so any order of the programs on the machine is correct.
The epilogue's ops that do not read the accumulator move under the `scf.if` too where
only it reads them and the consumer computes them (a bias vector, a splat); the others
(index math, a residual tile that the producer loads) stay before it, where every
program runs them.

`%i, %j` are the last two coordinates of the epilogue's store of a tile of the
accumulator's shape; `%partials` (f32, [S, rows, cols] of that store's tensor) and
`%tickets` (i32, one counter per program (x, y), zero before and after a launch) are two
kernel arguments the pass adds.  The user does not pass them: the kernel's attribute
`tawac.workspace` (a dict by argument name: dtype, zero, shape in the launch ABI's grid
entries) becomes the sidecar's `"workspace"`, and the launcher allocates them
(docs/abi.md).  `tawac.decomposition` records the decision for `explain`.

A chunk is `ceil(ceil((ub - lb) / step) / S)` whole steps; splits past the last step run
no step and add zeros (K not a multiple of the split is correct).  The kernel must leave
program id z free, and the loop must only accumulate products (a rescaled accumulator, as
attention's, is not a sum of per-split parts): both are checked, with a located error.

Stream-K (`stream=S`) splits only the tiles of the last, partly filled wave, as the tile
order decides at run time:

    %n, %z, %base = tile.split_info             (`persistent` computes it per program)
    %acc = scf.for %k = lb' to ub' step ...      (the z-th of n chunks)
    %last = scf.if (%n > 1) -> i1 {              (a split tile: partial at slot base + z,
      tile.store %acc, %partials[%base + %z, 0, 0]    one tile per SM; the ticket)
      scf.yield tile.arrive %tickets[%base] count %n
    } else { scf.yield false }
    %value = scf.if %last -> tensor { tile.split_sum %partials[%base, 0, 0] count %n }
             else { %acc }
    scf.if (%last or %n == 1) { ... the epilogue, reading %value ... }

one copy of the epilogue, which the programs of a split tile other than the last skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FunctionType,
    IndexType,
    IntegerType,
    ModuleOp,
    TensorType,
    i32,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import (
    DECOMPOSITION_ATTR,
    GRID_ATTR,
    WORKSPACE_ATTR,
    decomposition_of,
    infer_grid,
    times,
    to_attr,
)
from tawac.analysis.identity import argument_name
from tawac.analysis.scalars import constant_int
from tawac.dialects import tile
from tawac.support.diagnostics import CompileError

PARTIALS = "tawac_splitk_partials"
TICKETS = "tawac_splitk_tickets"
#: The most splits: each one is a program and an f32 partial tile.
MAX_SPLITS = 64


def _fail(msg: str, op: Operation | None) -> CompileError:
    return CompileError(f"split-k: {msg}", op)


def _main_loop(kernel: tile.KernelOp) -> scf.ForOp:
    loops = [
        op
        for op in kernel.body.block.ops
        if isinstance(op, scf.ForOp) and any(isinstance(o, tile.DotOp) for o in op.walk())
    ]
    if len(loops) != 1:
        raise _fail(
            f"needs exactly one loop of tile.dot in the kernel's body, found {len(loops)}",
            kernel if not loops else loops[1],
        )
    return loops[0]


def key_loop(kernel: tile.KernelOp) -> scf.ForOp | None:
    """The loop `splits=S` splits the keys of (`kernel`'s one loop of dots, an online
    softmax: an attention, masked by the keys' bound only); None for a kernel of another
    form (a causal attention: `_row_mask`)."""
    try:
        loop = _main_loop(kernel)
    except CompileError:
        return None
    if online_softmax(loop) is None or _row_mask(loop) is not None or _atomic(kernel):
        return None
    return loop


def _atomic(kernel: tile.KernelOp) -> tile.AtomicAddOp | None:
    """The kernel's first `tile.atomic_add`: a split would run the adds outside the
    last program's combine once per split (the pass does not tell which may be)."""
    return next((o for o in kernel.walk() if isinstance(o, tile.AtomicAddOp)), None)


def key_split(kernel: tile.KernelOp) -> dict[str, Any] | None:
    """The launch sidecar's `"key_split"` (docs/abi.md) of a kernel not yet decomposed:
    `{"steps": extent}` where `key_loop` finds a loop `splits=S` can split, its trip
    count in the sidecar's extent vocabulary (`_steps_extent`; None where it is no such
    form); None where there is no such loop or the kernel is decomposed already."""
    if decomposition_of(kernel)["kind"] != "data_parallel":
        return None
    try:
        loop = key_loop(kernel)
    except Exception:  # noqa: BLE001 (a form `key_loop` was not written for: no split)
        return None
    if loop is None:
        return None
    return {"steps": _steps_extent(kernel, loop)}


def _scaled_symbol(v: SSAValue) -> tuple[int, SSAValue | None] | None:
    """(c, x) where index value `v` is c times x, x a `tile.dim` or an argument (None: `v`
    is the constant c), through products with constants and index casts."""
    c = constant_int(v)
    if c is not None:
        return c, None
    op = v.owner
    if isinstance(op, arith.IndexCastOp):
        return _scaled_symbol(op.input)
    if isinstance(op, arith.MuliOp):
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = constant_int(b)
            inner = _scaled_symbol(a) if k is not None else None
            if inner is not None:
                return inner[0] * k, inner[1]
        return None
    if isinstance(op, tile.DimOp) or isinstance(v, BlockArgument):
        return 1, v
    return None


def _steps_extent(kernel: tile.KernelOp, loop: scf.ForOp) -> dict[str, Any] | None:
    """The key loop's trip count as a sidecar extent: `{"const": n}`, `{"cdiv": {"arg":
    name, "dim": d}, "by": n}` (a tensor argument's size) or `{"cdiv": {"scalar": name},
    "by": n}` (an index argument's value), for a loop from 0 to c * such a size in
    constant steps of a multiple of c; None for any other loop (its bound read from
    memory: a paged cache's lengths)."""
    step, lb = constant_int(loop.step), constant_int(loop.lb)
    ub = _scaled_symbol(loop.ub)
    if step is None or step <= 0 or lb != 0 or ub is None:
        return None
    c, x = ub
    if x is None:
        return {"const": max(0, -(-c // step))}
    if c <= 0 or step % c:
        return None
    if isinstance(x, BlockArgument):
        if x.block is not kernel.body.block or not isinstance(x.type, IndexType):
            return None
        return {"cdiv": {"scalar": argument_name(x, kernel)}, "by": step // c}
    dim = x.owner
    assert isinstance(dim, tile.DimOp)
    src = dim.source
    if not isinstance(src, BlockArgument) or src.block is not kernel.body.block:
        return None
    return {"cdiv": {"arg": argument_name(src, kernel), "dim": dim.dim.data}, "by": step // c}


def _is_zero(v: SSAValue) -> bool:
    op = v.owner
    if not isinstance(op, arith.ConstantOp):
        return False
    value = op.value
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return False
    return all(x == 0 for x in value.get_values())


def _check_accumulates(loop: scf.ForOp) -> TensorType:
    """The accumulator's type, after checking that the loop only adds products into one
    tile that starts at zero."""
    if len(loop.iter_args) != 1 or len(loop.results) != 1:
        raise _fail(
            f"the loop must carry one accumulator tile, it carries {len(loop.iter_args)} values",
            loop,
        )
    t = loop.results[0].type
    if not isinstance(t, TensorType) or not isinstance(t.element_type, Float32Type):
        raise _fail("the loop's accumulator must be an f32 tile", loop)
    if t.get_num_dims() != 2:
        raise _fail("the loop's accumulator must be a 2-d tile", loop)
    if not _is_zero(loop.iter_args[0]):
        raise _fail(
            "the accumulator must start at zero (arith.constant dense<0.0>): each split "
            "would add its initial value",
            loop,
        )
    carried = loop.body.block.args[1]
    yielded = loop.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    v = yielded.operands[0]
    while v is not carried:
        dot = v.owner
        if not isinstance(dot, tile.DotOp) or v.uses.get_length() != 1:
            raise _fail(
                "the loop must only add tile.dot products into its accumulator (each split "
                "sums its own steps, and the partial sums are added)",
                dot if isinstance(dot, Operation) else loop,
            )
        v = dot.acc
    if carried.uses.get_length() != 1:
        raise _fail("the accumulator must be read only by the first tile.dot of a step", loop)
    return t


def _after(kernel: tile.KernelOp, loop: scf.ForOp) -> tuple[list[Operation], list[Operation]]:
    """The ops after the loop (not the return): (those reading its results, directly
    or not: the epilogue proper; the others)."""
    dep: list[Operation] = []
    rest: list[Operation] = []
    reached = set(loop.results)
    op = loop.next_op
    while op is not None and not isinstance(op, tile.ReturnOp):
        inner = [o for o in op.walk()]
        reads = any(x in reached for o in inner for x in o.operands)
        if reads:
            dep.append(op)
            reached.update(op.results)
        else:
            rest.append(op)
        op = op.next_op
    return dep, rest


def _only_for(rest: list[Operation], dep: list[Operation]) -> list[Operation]:
    """The ops of `rest` that only the epilogue reads (directly or through one another)
    and that the consumer computes itself: they move under the `scf.if` with it, so the
    programs that are not last skip them and nothing they make lives across the ticket.
    A 2-d `tile.load` stays (`warp-specialize` gives it to the producer, which does not
    know which program is last), and so does any op with an effect."""
    inside = {o for op in dep for o in op.walk()}
    moved: list[Operation] = []
    for op in reversed(rest):
        t = op.results[0].type if len(op.results) == 1 else None
        two_d = isinstance(t, TensorType) and t.get_num_dims() == 2
        if isinstance(op, tile.LoadOp) and two_d:
            continue
        if not op.results or isinstance(op, tile.StoreOp) or op.regions:
            continue
        if all(u.operation in inside for r in op.results for u in r.uses):
            moved.append(op)
            inside.update(op.walk())
    return [op for op in rest if op in moved]


def _output_store(dep: list[Operation], acc: TensorType) -> tile.StoreOp:
    for op in dep:
        for o in op.walk():
            if not isinstance(o, tile.StoreOp):
                continue
            vt = o.value.type
            if isinstance(vt, TensorType) and vt.get_shape() == acc.get_shape():
                return o
    raise _fail(
        "the epilogue stores no tile of the accumulator's shape, which would place the "
        "partial sums",
        dep[0] if dep else None,
    )


def _add_workspace(
    kernel: tile.KernelOp,
    acc_t: TensorType,
    gt: tile.GlobalTensorType,
    dest_name: str,
    grid: list,
    splits: int,
    stream: int,
) -> tuple[SSAValue, SSAValue]:
    """The partials and tickets: two kernel arguments the launcher allocates
    (`_insert_workspace`)."""
    dims = [n.data for n in gt.dim_names]
    r, c = gt.rank - 2, gt.rank - 1
    rows, cols = acc_t.get_shape()
    if stream:
        # one slot per CTA (a CTA runs at most one split program of the tail), a tile each
        partials_t = tile.GlobalTensorType([tile.DYNAMIC, rows, cols], Float32Type())
        tickets_t = tile.GlobalTensorType([tile.DYNAMIC], i32)
        shapes = {
            PARTIALS: [{"sms": 1}, {"const": rows}, {"const": cols}],
            TICKETS: [{"sms": 1}],
        }
        decision = {"kind": "stream_k", "max_splits": stream}
    else:
        names3 = ["tawac_splits", dims[r], dims[c]] if dims else []
        partials_t = tile.GlobalTensorType([tile.DYNAMIC] * 3, Float32Type(), names3)
        tickets_t = tile.GlobalTensorType([tile.DYNAMIC] * 2, i32)
        shapes = {
            PARTIALS: [
                {"const": splits},
                {"cdiv": {"arg": dest_name, "dim": r}, "by": 1},
                {"cdiv": {"arg": dest_name, "dim": c}, "by": 1},
            ],
            TICKETS: [grid[0], grid[1]],
        }
        decision = {"kind": "split_k", "splits": splits}
    ws = _insert_workspace(
        kernel,
        {
            PARTIALS: (partials_t, {"dtype": "f32", "zero": False, "shape": shapes[PARTIALS]}),
            TICKETS: (tickets_t, {"dtype": "i32", "zero": True, "shape": shapes[TICKETS]}),
        },
        decision,
    )
    return ws[PARTIALS], ws[TICKETS]


def _insert_workspace(
    kernel: tile.KernelOp, buffers: dict[str, tuple[tile.GlobalTensorType, dict]], decision: dict
) -> dict[str, SSAValue]:
    """The workspace buffers as kernel arguments, by name, in order (the kernel's
    `tawac.workspace`, which the launcher allocates: {name: (type, {dtype, zero,
    shape})}), and the decision recorded for `explain`."""
    block = kernel.body.block
    values = {}
    for name, (t, _entry) in buffers.items():
        v = block.insert_arg(t, len(block.args))
        v.name_hint = name
        values[name] = v
    kernel.function_type = FunctionType.from_lists([a.type for a in block.args], [])
    kernel.attributes[WORKSPACE_ATTR] = to_attr({n: e for n, (_t, e) in buffers.items()})
    kernel.attributes[DECOMPOSITION_ATTR] = to_attr(decision)
    return values


def split_kernel(kernel: tile.KernelOp, splits: int, stream: int = 0) -> None:
    """Rewrites `kernel` into its split-K form (the module docstring): `splits` programs
    per output tile along program id z; or, with `stream` > 0, the stream-K form."""
    atomic = _atomic(kernel)
    if atomic is not None:
        raise _fail(
            "a kernel that adds tiles atomically (tile.atomic_add) is not split: each "
            "program of a split tile would add its own",
            atomic,
        )
    loop = _main_loop(kernel)
    softmax = online_softmax(loop)
    if softmax is not None:
        if stream:
            raise _fail(
                "stream-K of an attention loop (an online softmax) is not supported; split "
                "its keys with --split-k",
                loop,
            )
        row_mask = _row_mask(loop)
        if row_mask is not None:
            raise _fail(
                "splitting the keys of a causal attention (a mask that is not the keys' "
                "bound: a column iota against a length) is not supported: a split whose "
                "keys all lie past a row's diagonal leaves the row all masked, and its "
                "contracted scores * scale - max overflows exp2 (NaN out)",
                row_mask,
            )
        _split_keys(kernel, loop, softmax, splits)
        return
    if any(isinstance(o, tile.ProgramIdOp) and o.axis.data == 2 for o in kernel.walk()):
        raise _fail("needs program id z free (the splits go along it)", kernel)
    acc_t = _check_accumulates(loop)
    dep, rest = _after(kernel, loop)
    store = _output_store(dep, acc_t)
    dest = store.dest
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    if gt.rank < 2:
        raise _fail("the output store needs a tensor of rank 2 or more", store)
    grid = infer_grid(kernel)
    dest_name = argument_name(dest, kernel)
    r, c = gt.rank - 2, gt.rank - 1
    index_ops = {o for i in (store.indices[r], store.indices[c]) for o in _slice(i)}
    if index_ops & set(dep):
        raise _fail("the output store's coordinates depend on the accumulator", store)
    # the partial's coordinates are the store's: they stay where every program has them
    movable = [op for op in rest if op not in index_ops]
    dep = sorted(
        dep + _only_for(movable, dep), key=lambda o: o.parent_block().get_operation_index(o)
    )

    block = kernel.body.block
    partials, tickets = _add_workspace(kernel, acc_t, gt, dest_name, grid, splits, stream)

    def add(op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(loop))
        return op.results[0]

    idx = IndexType()
    if stream:
        info = tile.SplitInfoOp()
        Rewriter.insert_op(info, InsertPoint.before(loop))
        count, z, base = info.results
        count.name_hint, z.name_hint, base.name_hint = "splits", "split", "slot0"
    else:
        count = add(arith.ConstantOp.from_int_and_width(splits, idx))
        count.name_hint = "splits"
        z = add(tile.ProgramIdOp(2))
        z.name_hint = "split"
        base = None
    _chunk(loop, z, count, "k")

    acc = loop.results[0]
    zero = arith.ConstantOp.from_int_and_width(0, idx)
    ret = block.last_op
    assert ret is not None
    if not stream:
        # After the loop: the partial, the ticket, and the epilogue under the last arrival.
        px, py = tile.ProgramIdOp(0), tile.ProgramIdOp(1)
        part = tile.StoreOp(acc, partials, [z, store.indices[r], store.indices[c]])
        tx = px.result if grid[0].get("const") != 1 else zero.result
        ty = py.result if grid[1].get("const") != 1 else zero.result
        arrive = tile.ArriveOp(tickets, [tx, ty], count)
        arrive.result.name_hint = "last"
        first = [zero.result, store.indices[r], store.indices[c]]
        total = tile.SplitSumOp(partials, first, count, splits, acc_t)
        total.result.name_hint = "sum"
        branch = _under(arrive.result, [total], dep, acc, total.result)
        # as early as the store's coordinates allow (a Triton kernel computes them after
        # the loop): before the epilogue's other tiles (a residual) are in registers
        after: Operation = loop
        for o in block.ops:
            if o in index_ops and block.get_operation_index(o) > block.get_operation_index(after):
                after = o
        Rewriter.insert_op([zero, px, py, part, arrive], InsertPoint.after(after))
        Rewriter.insert_op(branch, InsertPoint.before(ret))
        return
    # Stream-K: a split program stores its partial at slot base + z and takes the
    # tile's ticket; the value the epilogue reads is the ordered sum for the last of a
    # split tile's programs and the accumulator itself for a tile of one program; the
    # other split programs skip the epilogue. One copy of the epilogue, and the partial
    # is stored before the epilogue's other tiles (a residual) are in registers.
    assert base is not None
    i1 = IntegerType(1)
    one = arith.ConstantOp.from_int_and_width(1, idx)
    no = arith.ConstantOp.from_int_and_width(0, i1)
    shared = arith.CmpiOp(count, one.result, "ugt")
    shared.result.name_hint = "shared"
    slot = arith.AddiOp(base, z)
    part = tile.StoreOp(acc, partials, [slot.result, zero.result, zero.result])
    arrive = tile.ArriveOp(tickets, [base], count)
    ticket = scf.IfOp(
        shared.result,
        [i1],
        Region(Block([slot, part, arrive, scf.YieldOp(arrive.result)])),
        Region(Block([scf.YieldOp(no.result)])),
    )
    last = ticket.results[0]
    last.name_hint = "last"
    total = tile.SplitSumOp(partials, [base, zero.result, zero.result], count, stream, acc_t)
    total.result.name_hint = "sum"
    value = scf.IfOp(
        last,
        [acc_t],
        Region(Block([total, scf.YieldOp(total.result)])),
        Region(Block([scf.YieldOp(acc)])),
    )
    value.results[0].name_hint = "tile_sum"
    alone = arith.XOrIOp(shared.result, arith.ConstantOp.from_int_and_width(1, i1).result)
    Rewriter.insert_op([zero, one, no, shared, ticket, value], InsertPoint.after(loop))
    true = alone.operands[1].owner
    run = arith.OrIOp(last, alone.result)
    run.result.name_hint = "epilogue"
    Rewriter.insert_op([true, alone, run], InsertPoint.after(value))
    branch = _under(run.result, [], dep, acc, value.results[0])
    Rewriter.insert_op(branch, InsertPoint.before(ret))


@dataclass(frozen=True)
class OnlineSoftmax:
    """An attention loop's carried values (`online_softmax`): their positions among the
    loop's results, and the base of its rescale."""

    acc: int
    row_max: int
    row_sum: int
    base: str


def _carried(loop: scf.ForOp, i: int) -> tuple[SSAValue, SSAValue]:
    """(the block argument, the yielded value) of loop-carried value i."""
    y = loop.body.block.last_op
    assert isinstance(y, scf.YieldOp)
    return loop.body.block.args[1 + i], y.operands[i]


def _operands_are(op: Operation | None, kind: type, a: SSAValue, b: SSAValue) -> bool:
    """Whether `op` is a `kind` of a and b, in either order."""
    if not isinstance(op, kind):
        return False
    x, y = op.operands
    return (x is a and y is b) or (x is b and y is a)


def online_softmax(loop: scf.ForOp) -> OnlineSoftmax | None:
    """The loop's online softmax (FlashAttention's), or None: it carries an f32 tile acc,
    a row max m and a row sum l, each step with alpha = exp2(m - m') (or exp) where
    m' = max(m, ...), l' = l * alpha + ..., and acc' = tile.dot(..., acc * broadcast(alpha))
    (through any chain of dots); acc and l start at zero."""
    if len(loop.results) != 3:
        return None
    kinds = [r.type for r in loop.results]
    if not all(
        isinstance(t, TensorType) and isinstance(t.element_type, Float32Type) for t in kinds
    ):
        return None
    dims = [t.get_num_dims() for t in kinds]  # type: ignore[union-attr]
    if sorted(dims) != [1, 1, 2]:
        return None
    acc = dims.index(2)
    vecs = [i for i in range(3) if dims[i] == 1]
    row_max = next(
        (
            i
            for i in vecs
            if isinstance(_carried(loop, i)[1].owner, arith.MaximumfOp | arith.MaxnumfOp)
            and _carried(loop, i)[0] in _carried(loop, i)[1].owner.operands  # type: ignore[union-attr]
        ),
        None,
    )
    if row_max is None:
        return None
    row_sum = next(i for i in vecs if i != row_max)
    m, m_new = _carried(loop, row_max)
    alpha, base = None, ""
    for op in loop.body.block.ops:
        if not isinstance(op, math.Exp2Op | math.ExpOp):
            continue
        sub = op.operand.owner
        if isinstance(sub, arith.SubfOp) and sub.lhs is m and sub.rhs is m_new:
            alpha, base = op.result, "exp2" if isinstance(op, math.Exp2Op) else "exp"
            break
    if alpha is None:
        return None
    l_, l_new = _carried(loop, row_sum)
    added = l_new.owner
    if not isinstance(added, arith.AddfOp) or not any(
        _operands_are(x.owner, arith.MulfOp, l_, alpha) for x in added.operands
    ):
        return None
    a, v = _carried(loop, acc)
    while isinstance(v.owner, tile.DotOp):
        v = v.owner.acc
    scaled = v.owner
    if not isinstance(scaled, arith.MulfOp) or a not in scaled.operands:
        return None
    other = scaled.rhs if scaled.lhs is a else scaled.lhs
    if not isinstance(other.owner, tile.BroadcastOp) or other.owner.source is not alpha:
        return None
    if not (_is_zero(loop.iter_args[acc]) and _is_zero(loop.iter_args[row_sum])):
        return None
    return OnlineSoftmax(acc, row_max, row_sum, base)


ROW_MAXES = "tawac_splitk_row_max"
ROW_SUMS = "tawac_splitk_row_sum"


#: The second level of split-key attention's combine (`_split_keys`): its workspace
#: names end with this.
LEVEL2 = "2"


def _group_size(splits: int) -> int:
    """Splits per first-level group of the combine: 2^ceil(log2(S) / 2) from 16 splits
    (16 -> 4 groups of 4, 32 -> 4 of 8, 64 -> 8 of 8), else all in one (one level)."""
    if splits < 16:
        return splits
    return 1 << -(-(splits - 1).bit_length() // 2)


def _keys_workspace(
    kernel: tile.KernelOp, store: tile.StoreOp, grid: list, splits: int, groups: int
) -> dict[str, SSAValue]:
    """Split-key attention's workspace, by name: the partial outputs, shaped as the
    output with the splits first (its last dimension the tile's columns: whole 8-byte
    pairs), the row maxima and sums (one dimension less), and one ticket per query tile
    (and group); with `groups` > 1, the same again for the groups' combined partials
    (names ending in `LEVEL2`). And the decision, recorded for `explain`."""
    dest = store.dest
    gt = dest.type
    assert isinstance(gt, tile.GlobalTensorType)
    out = argument_name(dest, kernel)
    r = gt.rank
    dims = [{"cdiv": {"arg": out, "dim": d}, "by": 1} for d in range(r - 1)]
    acc_t = store.value.type
    assert isinstance(acc_t, TensorType)
    cols = acc_t.get_shape()[1]
    last = {"const": cols}  # whole rows of the tile: 8-byte pairs, no column bound
    per_tile = [grid[2], grid[1], grid[0]]
    f32 = {"dtype": "f32", "zero": False}
    levels = [("", splits, per_tile + ([{"const": groups}] if groups > 1 else []))]
    if groups > 1:
        levels.append((LEVEL2, groups, per_tile))
    shapes: dict[str, tuple[tile.GlobalTensorType, dict]] = {}
    for suffix, n, tickets in levels:
        lead = {"const": n}
        shapes[PARTIALS + suffix] = (
            tile.GlobalTensorType([tile.DYNAMIC] * r + [cols], Float32Type()),
            {**f32, "shape": [lead, *dims, last]},
        )
        for name in (ROW_MAXES, ROW_SUMS):
            shapes[name + suffix] = (
                tile.GlobalTensorType([tile.DYNAMIC] * r, Float32Type()),
                {**f32, "shape": [lead, *dims]},
            )
        shapes[TICKETS + suffix] = (
            tile.GlobalTensorType([tile.DYNAMIC] * len(tickets), i32),
            {"dtype": "i32", "zero": True, "shape": tickets},
        )
    kernel.attributes[GRID_ATTR] = to_attr([times(grid[0], splits), grid[1], grid[2]])
    decision = {"kind": "split_keys", "splits": splits}
    if groups > 1:
        decision["groups"] = groups
    return _insert_workspace(kernel, shapes, decision)


def _chunk(loop: scf.ForOp, z: SSAValue, count: SSAValue, hint: str) -> None:
    """`loop` runs the z-th of `count` chunks of its whole steps: [lb + z * chunk,
    min(lb + (z + 1) * chunk, ub)), chunk = ceil(ceil((ub - lb) / step) / count) steps;
    its bounds named `<hint>_lo`, `<hint>_hi`."""

    def add(op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(loop))
        return op.results[0]

    lb, ub, step = loop.lb, loop.ub, loop.step
    steps = add(arith.CeilDivSIOp(add(arith.SubiOp(ub, lb)), step))
    per = add(arith.CeilDivSIOp(steps, count))
    chunk = add(arith.MuliOp(per, step))
    lo = add(arith.AddiOp(lb, add(arith.MuliOp(z, chunk))))
    hi = add(arith.MinSIOp(add(arith.AddiOp(lo, chunk)), ub))
    lo.name_hint, hi.name_hint = f"{hint}_lo", f"{hint}_hi"
    loop.operands[0] = lo
    loop.operands[1] = hi


def _row_mask(loop: scf.ForOp) -> Operation | None:
    """A compare in the key loop other than a key bound (`tile.cmpi` of a column iota and
    a splat length: every row of a block masks the same keys), e.g. a causal mask's row
    iota against the column iota; None where there is none."""
    for op in loop.walk():
        if not isinstance(op, tile.CmpiOp):
            continue
        kinds = set()
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, tile.IotaOp):
                kinds.add(f"iota{owner.dim.data}")
            elif isinstance(owner, tile.SplatOp):
                kinds.add("splat")
            else:
                kinds.add("other")
        if kinds != {"iota1", "splat"}:
            return op
    return None


def _split_keys(kernel: tile.KernelOp, loop: scf.ForOp, sm: OnlineSoftmax, splits: int) -> None:
    """Split-key attention (flash-decoding): the module docstring's form for a loop with
    an online softmax, its splits along program id x (x = block * S + split: the other
    axes keep their meaning, and a decode step has one query block).  The partial
    (O, m, l) is stored where, and as, the epilogue stores the output (a stacked tile
    too), so rows the output does not have (a decode step's padding) are neither
    stored nor read back."""
    grid = infer_grid(kernel)
    acc_t = loop.results[sm.acc].type
    assert isinstance(acc_t, TensorType)
    dep, rest = _after(kernel, loop)
    store = _output_store(dep, acc_t)
    coords = list(store.indices)
    index_ops = {o for i in coords for o in _slice(i)}
    if index_ops & set(dep):
        raise _fail("the output store's coordinates depend on the loop's results", store)
    stack = tile.stack_of(store)
    idx = IndexType()
    block = kernel.body.block
    first = block.first_op
    assert first is not None

    def at_top(op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(first))
        return op.results[0]

    count = at_top(arith.ConstantOp.from_int_and_width(splits, idx))
    count.name_hint = "splits"
    zero = at_top(arith.ConstantOp.from_int_and_width(0, idx))
    xs = at_top(tile.ProgramIdOp(0))
    px = at_top(arith.DivUIOp(xs, count))
    z = at_top(arith.RemUIOp(xs, count))
    px.name_hint, z.name_hint = "block", "split"
    for old in [o for o in kernel.walk() if isinstance(o, tile.ProgramIdOp)]:
        if old.axis.data == 0 and old.result is not xs:
            old.result.replace_all_uses_with(px)
            Rewriter.erase_op(old)
    used = {o.axis.data for o in kernel.walk() if isinstance(o, tile.ProgramIdOp)}
    py = at_top(tile.ProgramIdOp(1)) if 1 in used else zero
    pz = at_top(tile.ProgramIdOp(2)) if 2 in used else zero
    size = _group_size(splits)
    groups = -(-splits // size)
    ws = _keys_workspace(kernel, store, grid, splits, groups)
    _chunk(loop, z, count, "key")

    movable = [op for op in rest if op not in index_ops]
    dep = sorted(dep + _only_for(movable, dep), key=lambda o: block.get_operation_index(o))
    acc, m, l_ = (loop.results[i] for i in (sm.acc, sm.row_max, sm.row_sum))
    ops = _partial_stores((acc, m, l_), ws, "", z, coords, stack)
    if groups == 1:
        tile_ops, arrive = _ticket(ws[TICKETS], [pz, py, px], count)
        merged = _combine(ws, "", zero, coords, count, splits, sm.base, acc_t, stack)
        outer = _under_all(arrive, [merged], dep, _results(acc, m, l_, merged))
    else:
        # two levels: the last of each group of `size` splits combines the group's (a
        # slot of the second level), the last of the groups combines theirs
        k = arith.ConstantOp.from_int_and_width(size, idx)
        g = arith.ConstantOp.from_int_and_width(groups, idx)
        grp = arith.DivUIOp(z, k.result)
        z0 = arith.MuliOp(grp.result, k.result)
        left = arith.SubiOp(count, z0.result)
        n1 = arith.MinSIOp(k.result, left.result)
        grp.result.name_hint, z0.result.name_hint, n1.result.name_hint = "group", "first", "n"
        tile_ops, arrive = _ticket(ws[TICKETS], [pz, py, px, grp.result], n1.result)
        tile_ops = [k, g, grp, z0, left, n1, *tile_ops]
        part = _combine(ws, "", z0.result, coords, n1.result, size, sm.base, acc_t, stack)
        second = _partial_stores(
            (part.out, part.row_max, part.row_sum), ws, LEVEL2, grp.result, coords, stack
        )
        second_ops, arrive2 = _ticket(ws[TICKETS + LEVEL2], [pz, py, px], g.result)
        merged = _combine(ws, LEVEL2, zero, coords, g.result, groups, sm.base, acc_t, stack)
        inner = _under_all(arrive2, [merged], dep, _results(acc, m, l_, merged))
        then = Block([part, *second, *second_ops, inner, scf.YieldOp()])
        outer = scf.IfOp(arrive, [], Region(then))
    # after the loop and the output's coordinates (a Triton kernel computes them late)
    after: Operation = loop
    for o in block.ops:
        if o in index_ops and block.get_operation_index(o) > block.get_operation_index(after):
            after = o
    Rewriter.insert_op(ops + tile_ops, InsertPoint.after(after))
    ret = block.last_op
    assert ret is not None
    Rewriter.insert_op(outer, InsertPoint.before(ret))


def _partial_stores(values, ws, suffix, slot, coords, stack) -> list[Operation]:
    """Stores of a partial (O, m, l) at `slot` of the workspace `suffix`, where and as
    the output is stored."""
    o, m, l_ = values
    st = stack if stack > 1 else None
    return [
        tile.StoreOp(o, ws[PARTIALS + suffix], [slot, *coords], stack=st),
        tile.StoreOp(m, ws[ROW_MAXES + suffix], [slot, *coords[:-1]], stack=st),
        tile.StoreOp(l_, ws[ROW_SUMS + suffix], [slot, *coords[:-1]], stack=st),
    ]


def _ticket(tickets, at, count) -> tuple[list[Operation], SSAValue]:
    arrive = tile.ArriveOp(tickets, at, count)
    arrive.result.name_hint = "last"
    return [arrive], arrive.result


def _combine(ws, suffix, first, coords, count, most, base, acc_t, stack) -> tile.SplitSoftmaxOp:
    merged = tile.SplitSoftmaxOp(
        ws[PARTIALS + suffix],
        (ws[ROW_MAXES + suffix], ws[ROW_SUMS + suffix]),
        [first, *coords],
        count,
        most,
        base,
        acc_t,
        stack,
    )
    merged.out.name_hint, merged.row_max.name_hint, merged.row_sum.name_hint = "o", "m", "l"
    return merged


def _results(acc, m, l_, merged) -> dict[SSAValue, SSAValue]:
    return {acc: merged.out, m: merged.row_max, l_: merged.row_sum}


def _under(
    cond: SSAValue, first: list[Operation], dep: list[Operation], acc: SSAValue, total: SSAValue
) -> scf.IfOp:
    """`scf.if cond { first; dep (moved here, reading total where they read acc) }`."""
    return _under_all(cond, first, dep, {acc: total})


def _under_all(
    cond: SSAValue, first: list[Operation], dep: list[Operation], new: dict[SSAValue, SSAValue]
) -> scf.IfOp:
    """`scf.if cond { first; dep (moved here, reading new[v] where they read v) }`."""
    then = Block()
    then.add_ops(first)
    for op in dep:
        op.detach()
        then.add_op(op)
    then.add_op(scf.YieldOp())
    branch = scf.IfOp(cond, [], Region(then))
    for old, value in new.items():
        for use in list(old.uses):
            if branch.is_ancestor(use.operation):
                use.operation.operands[use.index] = value
    return branch


def _slice(v: SSAValue) -> set[Operation]:
    """The ops `v` is computed from (in the kernel's body)."""
    seen: set[Operation] = set()
    work = [v]
    while work:
        owner = work.pop().owner
        if not isinstance(owner, Operation) or owner in seen:
            continue
        seen.add(owner)
        work.extend(owner.operands)
    return seen


@dataclass(frozen=True)
class SplitKPass(ModulePass):
    name = "split-k"

    splits: int = 1
    """Programs per output tile, each adding the products of a chunk of the K steps."""
    stream: int = 0
    """Stream-K (> 0): the tiles of the last, partly filled wave split among the CTAs,
    at most `stream` programs per tile (`persistent` decides how many); 0: off."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not 1 <= self.splits <= MAX_SPLITS:
            raise CompileError(f"split-k: splits must be 1..{MAX_SPLITS}, got {self.splits}")
        if not 0 <= self.stream <= MAX_SPLITS:
            raise CompileError(f"split-k: stream must be 0..{MAX_SPLITS}, got {self.stream}")
        if self.splits > 1 and self.stream:
            raise CompileError("split-k: split-K and stream-K are two decompositions; choose one")
        if self.splits == 1 and not self.stream:
            return
        for kernel in [o for o in op.body.block.ops if isinstance(o, tile.KernelOp)]:
            if decomposition_of(kernel)["kind"] == "swap_ab":
                raise CompileError(
                    "split-k: the tile is computed transposed (swap-ab); split-K and "
                    "stream-K do not combine with swap-AB yet",
                    kernel,
                )
            split_kernel(kernel, self.splits, self.stream)
