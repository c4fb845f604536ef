"""Values a consumer computes again after a row reduction from the ring slots it still
holds, instead of holding them in registers across it (`reread-slots`).

A row kernel's consumer reads its tiles from their slots into registers, computes, and
reduces along the rows (`tile.reduce`: a sum over the row's lanes and warps, through
shared memory and a barrier); what it computes after the reduction often needs the row
again (a norm backward: x hat and w dy beside the row's sums). Held across the reduction,
each such row-long value costs its registers for the whole reduction; at 8192 columns
over one warp group that is 64 a thread per value, and four of them spill. The slot the
row came from is still in shared memory until the consumer releases it, so the value can
be read and computed again after the reduction instead.

The block of ops is cut at its reductions into segments (a reduction is the last op of
its segment; an op that holds one counts as one; reductions one after the other, with
no 2-d tile made between them, are one cut: the layer norm's two sums, whose second
operand is held from the first to the second rather than read a third time). A value is
*computable again* in a segment where:

- it is an `aref.get` result whose aref the block gets and releases once each (so that
  its release can move after a second read), or
- its op is elementwise and cheap (`CHEAP_OPS`: casts, add, subtract, multiply, negate,
  a broadcast) and every tensor operand is computable again or *free*: a splat, a
  constant, a 1-d tile broadcast along the rows (a value a row: what each thread holds
  is one register a row it covers) or such a 1-d tile itself; scalars are free.

Its *late uses* are those in a later segment than its definition. Each 2-d tile (or
column-long 1-d tile) computable again with late uses is a *target*: `apply` clones the
chain of ops that computes it (a second `aref.get` at the same transfer for each slot it
reads) before its first use in each later segment, rewires that segment's uses to the
clone, and moves each slot's release after its last read. Legal always: a slot's payload
does not change while the consumer holds it (the producer waits for the release to
refill it), so the second read returns the first's values, and the cloned ops compute
what the originals did from them.

`held_across` estimates the registers a thread holds across each reduction (2-d tiles
and column vectors, before and after the rewrite), which the planner compares with the
consumer's budget (`tawac.schedule.planner.plan_reread`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.arefs import last_reader
from tawac.dialects import aref, tile
from tawac.target import HOPPER

#: Elementwise ops cheap enough to compute twice (a cast or one FMA-pipe op an element).
CHEAP_OPS = (
    arith.ExtFOp,
    arith.TruncFOp,
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.NegfOp,
    tile.BroadcastOp,
)


def single_transfer(get: aref.GetOp) -> aref.ConsumedOp | None:
    """The release of `get`'s slot where its block gets and releases that aref once each,
    after the get, plainly (not deferred, not predicated); else None."""
    block = get.parent_block()
    if block is None:
        return None
    gets = [o for o in block.ops if isinstance(o, aref.GetOp) and o.aref == get.aref]
    done = [o for o in block.ops if isinstance(o, aref.ConsumedOp) and o.aref == get.aref]
    if len(gets) != 1 or len(done) != 1:
        return None
    consumed = done[0]
    if consumed.deferred is not None or consumed.when is not None:
        return None
    if block.get_operation_index(consumed) < block.get_operation_index(get):
        return None
    return consumed


def _tiles(op: Operation) -> bool:
    """Whether `op` makes a 2-d tile."""
    return any(isinstance(r.type, TensorType) and r.type.get_num_dims() == 2 for r in op.results)


def _reduces(op: Operation) -> bool:
    return any(isinstance(o, tile.ReduceOp) for o in op.walk())


@dataclass(frozen=True)
class Remat:
    """Of one block: per later segment, the op before which the targets used there are
    computed again and the targets (in definition order); the gets whose slots are read
    again."""

    block: Block
    segments: tuple[tuple[Operation, tuple[SSAValue, ...]], ...]
    gets: tuple[aref.GetOp, ...]


class _Block:
    """A block cut at its reductions."""

    def __init__(self, block: Block):
        self.block = block
        self.ops = list(block.ops)
        self.index = {op: i for i, op in enumerate(self.ops)}
        points = [i for i, op in enumerate(self.ops) if _reduces(op)]
        # reductions one after the other, nothing but scalars between them, are one cut
        self.points = [
            p
            for k, p in enumerate(points)
            if k + 1 == len(points) or any(_tiles(op) for op in self.ops[p + 1 : points[k + 1]])
        ]

    def segment(self, i: int) -> int:
        """The segment of the op at index i: the reductions before it."""
        return bisect_left(self.points, i)

    def top(self, op: Operation) -> Operation | None:
        return self.block.find_ancestor_op_in_block(op)

    def defined_here(self, v: SSAValue) -> Operation | None:
        owner = v.owner
        if isinstance(owner, Operation) and owner.parent_block() is self.block:
            return owner
        return None


def free(v: SSAValue) -> bool:
    """A value an op computed again may read where it stands: a scalar, a splat, a
    constant, a 1-d tile broadcast along the rows, or a 1-d tile so broadcast."""
    t = v.type
    if not isinstance(t, TensorType):
        return True
    owner = v.owner
    if isinstance(owner, tile.SplatOp | arith.ConstantOp):
        return True
    if isinstance(owner, tile.BroadcastOp) and owner.dim.data == 0:
        return True
    if t.get_num_dims() == 1 and v.uses:
        return all(
            isinstance(u.operation, tile.BroadcastOp) and u.operation.dim.data == 0 for u in v.uses
        )
    return False


def _computable(
    v: SSAValue, b: _Block, slot_ok: Callable[[aref.GetOp], bool], memo: dict[SSAValue, bool]
) -> bool:
    if v in memo:
        return memo[v]
    op = b.defined_here(v)
    ok = False
    if isinstance(op, aref.GetOp):
        ok = slot_ok(op) and single_transfer(op) is not None
    elif isinstance(op, CHEAP_OPS):
        ok = all(free(o) or _computable(o, b, slot_ok, memo) for o in op.operands)
    memo[v] = ok
    return ok


def _is_target(v: SSAValue) -> bool:
    """A value worth computing again: a 2-d tile, or a 1-d tile not along the rows."""
    t = v.type
    return isinstance(t, TensorType) and not free(v) and t.get_num_dims() in (1, 2)


def plan(block: Block, slot_ok: Callable[[aref.GetOp], bool]) -> Remat | None:
    """The rewrite of `block` (None where nothing is live across a reduction that could
    be computed again): `slot_ok` says which gets may be read a second time."""
    b = _Block(block)
    if not b.points:
        return None
    memo: dict[SSAValue, bool] = {}
    later: dict[int, list[SSAValue]] = {}
    first: dict[int, int] = {}
    for i, op in enumerate(b.ops):
        for v in op.results:
            if not _is_target(v) or not _computable(v, b, slot_ok, memo):
                continue
            here = b.segment(i)
            for use in v.uses:
                user = b.top(use.operation)
                if user is None:
                    continue
                k = b.segment(b.index[user])
                if k <= here:
                    continue
                if v not in later.setdefault(k, []):
                    later[k].append(v)
                first[k] = min(first.get(k, len(b.ops)), b.index[user])
    if not later:
        return None
    segments = tuple((b.ops[first[k]], tuple(later[k])) for k in sorted(later))
    gets: list[aref.GetOp] = []
    for _, targets in segments:
        for v in targets:
            for g in _chain_gets(v, b):
                if g not in gets:
                    gets.append(g)
    return Remat(block, segments, tuple(gets))


def consumer_plans(kernel: tile.KernelOp, slot_ok: Callable[[aref.GetOp], bool]) -> list[Remat]:
    """`plan` of every block of `kernel`'s consumer partitions that gets a slot."""
    out: list[Remat] = []
    for part in kernel.body.block.ops:
        if not isinstance(part, aref.PartitionOp) or part.role.data != "consumer":
            continue
        blocks = {g.parent_block(): None for g in part.walk() if isinstance(g, aref.GetOp)}
        for block in blocks:
            if block is not None and (r := plan(block, slot_ok)) is not None:
                out.append(r)
    return out


def _chain_gets(v: SSAValue, b: _Block) -> list[aref.GetOp]:
    op = b.defined_here(v)
    if isinstance(op, aref.GetOp):
        return [op]
    if op is None or free(v):
        return []
    out: list[aref.GetOp] = []
    for o in op.operands:
        if not free(o):
            out += [g for g in _chain_gets(o, b) if g not in out]
    return out


def apply(r: Remat) -> None:
    """Computes the targets again in each later segment (one clone of each op of their
    chains per segment) and moves each re-read slot's release after its last read."""
    b = _Block(r.block)
    releases = {g: single_transfer(g) for g in r.gets}
    last_get: dict[aref.GetOp, aref.GetOp] = {}
    for at, targets in r.segments:
        k = b.segment(b.index[at])
        mapping: dict[SSAValue, SSAValue] = {}
        for v in targets:
            _clone(v, b, at, mapping, last_get)
        for v in targets:
            for use in list(v.uses):
                user = b.top(use.operation)
                if user is not None and user in b.index and b.segment(b.index[user]) == k:
                    use.operation.operands[use.index] = mapping[v]
    for get, again in last_get.items():
        consumed = releases[get]
        assert consumed is not None
        consumed.detach()
        Rewriter.insert_op(consumed, InsertPoint.after(last_reader(again)))


def _clone(
    v: SSAValue,
    b: _Block,
    at: Operation,
    mapping: dict[SSAValue, SSAValue],
    last_get: dict[aref.GetOp, aref.GetOp],
) -> SSAValue:
    if v in mapping:
        return mapping[v]
    op = b.defined_here(v)
    if op is None or free(v):
        return v
    for o in op.operands:
        _clone(o, b, at, mapping, last_get)
    new = op.clone(mapping)
    if isinstance(new, aref.GetOp):  # received by `op`, held until its release: no wait
        new.properties["again"] = UnitAttr()
    for old, nv in zip(op.results, new.results, strict=True):
        mapping[old] = nv
        nv.name_hint = old.name_hint
    Rewriter.insert_op(new, InsertPoint.before(at))
    if isinstance(op, aref.GetOp):
        assert isinstance(new, aref.GetOp)
        last_get[op] = new
    return mapping[v]


# -- the estimate --------------------------------------------------------------------------


def _registers(v: SSAValue, warp_groups: int, rows: int) -> float:
    """32-bit registers a thread holds of `v` (blocked layout: `rows` rows over the
    warp groups' threads; a 1-d tile is along the columns)."""
    t = v.type
    assert isinstance(t, TensorType)
    threads = warp_groups * HOPPER.warp_group_size
    shape = t.get_shape()
    if len(shape) == 2:
        per = shape[0] * shape[1] / threads
    else:
        per = shape[0] / max(1, threads // max(1, rows))
    return per * t.element_type.bitwidth / 32


def held_across(block: Block, warp_groups: int, remat: Remat | None = None) -> int:
    """The most registers a thread holds in row-long values (2-d tiles, column
    vectors: not free) across any reduction of `block`, with the late uses of `remat`'s
    targets computed again (None: as the block stands)."""
    b = _Block(block)
    if not b.points:
        return 0
    rows = max(
        (
            v.type.get_shape()[0]
            for op in b.ops
            for v in op.results
            if isinstance(v.type, TensorType) and v.type.get_num_dims() == 2
        ),
        default=1,
    )
    again: dict[SSAValue, int] = {}
    if remat is not None:
        for at, targets in remat.segments:
            k = b.segment(b.index[at])
            for v in targets:
                again[v] = min(again.get(v, k), k)
    values: list[tuple[SSAValue, int]] = [(a, -1) for a in block.args]
    values += [(v, i) for i, op in enumerate(b.ops) for v in op.results]
    peak = 0.0
    for p in b.points:
        total = 0.0
        for v, i in values:
            if not _is_target(v) or i >= p:
                continue
            ends = []
            for use in v.uses:
                user = b.top(use.operation)
                if user is None:
                    continue
                j = b.index[user]
                if v in again and b.segment(j) >= again[v]:
                    continue  # computed again there
                ends.append(j)
            if ends and max(ends) > p:
                total += _registers(v, warp_groups, rows)
        peak = max(peak, total)
    return round(peak)


__all__ = [
    "CHEAP_OPS",
    "Remat",
    "apply",
    "consumer_plans",
    "free",
    "held_across",
    "plan",
    "single_transfer",
]
