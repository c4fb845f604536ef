"""`reuse-slots`: loops that read the same tiles again take them from the ring (rows kept
on chip), applying the `resident` arefs of `#tawac.schedule`. Runs after `pipeline`,
before `persistent`.

A row kernel without MMAs often reads its row block twice or three times: a norm's
statistics loop, then its output loop; a softmax's maximum and sum, then its output.
`warp-specialize` streams each loop's tiles through one ring, so the producer loads every
tile once per loop. Where the tiles of one program fit in the ring at once, the producer
can load them once and the consumer read the slots again.

Input: an aref the schedule marks `resident`, whose transfers form a chain
(`tawac.analysis.arefs.rereads`): the producer's loops (siblings over the same bounds)
load the same tiles at the same iterations and put them, the first numbering them 0..T-1,
the consumer's loops get and release one slot per iteration. Else a located error.

Output, with T = max(0, ceil((ub - lb) / step)) and D the ring's depth, `%resident` =
T <= D computed before the first loop of each partition:

- the producer's later loops put only where `%resident` does not hold (`when`);
- the consumer's loops but the last release only where it does not hold; the later loops
  read the slot of iteration j at the first loop's index j where it holds (a `select`), so
  the last loop releases the slots the first one filled;
- where the schedule marks the aref `l2` too, the first loop's put `l2 evict_last` where
  the row block does not stay in the ring (`l2_if %streamed`: elsewhere no line is read
  again, and a kept one would outlive the kernel at a priority others yield to), the
  later loops' `l2 evict_first`, and every `tile.store` of the kernel `l2 evict_first`:
  eviction hints (`.L2::cache_hint`) for a row block longer than the ring, which each
  loop reads from memory, so that the second read finds the first's lines in L2.

Where it does not hold (a row longer than the ring) the program runs as before. Where it
holds, the producer's first loop fills T distinct slots, which the consumer holds until
its last loop: no put waits for a slot the consumer still needs, and a slot's full barrier
stays in the phase of its put until the slot is released, so the later loops' waits pass
at once. The producer's loads of the later loops are the same tiles at the same
coordinates (checked), and the producer already runs ahead of the consumer's stores by
up to D slots, so reading them once, before those stores, is what a ring of 2T slots would
have done too. Per program, the aref then moves T transfers instead of T per loop:
`persistent` numbers the next program's from there (it reads `resident` from the same
schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac import schedule
from tawac.analysis.arefs import Rereads, rereads, stays_in_ring
from tawac.analysis.loops import trip_count
from tawac.dialects import aref, tile
from tawac.support.diagnostics import CompileError


def _guard(loop: scf.ForOp, depth: int) -> tuple[SSAValue, SSAValue]:
    """Before `loop`: whether its trips (max(0, ceil((ub - lb) / step))) stay in a ring
    of `depth` slots, and the negation; returns (%resident, %streamed)."""
    trips = trip_count(loop.lb, loop.ub, loop.step)
    test = stays_in_ring(trips[-1].results[0], depth)
    true = arith.ConstantOp(IntegerAttr(1, IntegerType(1)))
    streamed = arith.XOrIOp(test[-1].results[0], true.result)
    streamed.result.name_hint = "streamed"
    Rewriter.insert_op([*trips, *test, true, streamed], InsertPoint.before(loop))
    return test[-1].results[0], streamed.result


def _apply(
    create: aref.CreateOp, chain: Rereads, hints: bool, hold: int, numbering: _Numbering
) -> None:
    depth = create.aref_type.depth.data
    if hold:
        _apply_held(chain, depth, hold, hints, numbering)
        return
    # the producer: later loops put only where the tiles do not stay in the ring; with
    # `hints`, the first loop's copies keep their lines in L2 for the later loops' (which
    # copy only where the row block is longer than the ring), and those let theirs go
    _, streamed = _guard(chain.producer_loops[0], depth)
    if hints:  # only where the later loops copy again: a kept line no one reads again
        first = chain.puts[0]  # would outlive the kernel at a priority others yield to
        _replace(
            first,
            aref.PutOp(
                first.aref, first.index, list(first.values), first.when, "evict_last", streamed
            ),
        )
    for put in chain.puts[1:]:
        l2 = "evict_first" if hints else None
        _replace(put, aref.PutOp(put.aref, put.index, list(put.values), streamed, l2))
    # the consumer: hold the slots until the last loop, which reads and releases them at
    # the first loop's indices
    fits, streamed = _guard(chain.consumer_loops[0], depth)
    last = len(chain.gets) - 1
    for k, (get, release) in enumerate(zip(chain.gets, chain.releases, strict=True)):
        if k:
            pick = arith.SelectOp(fits, chain.local[k], get.index)
            pick.result.name_hint = "slot_it"
            Rewriter.insert_op(pick, InsertPoint.before(get))
            get.operands = [get.aref, pick.result]
            if k == last:
                release.operands = [release.aref, pick.result]
                continue
        _replace(release, aref.ConsumedOp(release.aref, release.index, when=streamed))


class _Ops:
    """Ops built in order, to be inserted together."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def const(self, v: int) -> SSAValue:
        return self.add(arith.ConstantOp.from_int_and_width(v, IndexType()))


@dataclass
class _Held:
    """Per partition, before its first loop of the chain: the values that number a
    held ring's transfers (`_apply_held`)."""

    fits: SSAValue  # T <= D: the whole row block stays in the ring
    fit_base: SSAValue  # p * T: the program's first transfer where it fits
    held_base: SSAValue  # D * p: a held slot's uses, one a program
    stream_bases: list[SSAValue]  # per loop k: (p * L + k) * (T - H), streamed before it
    hold: SSAValue  # H
    first_moved: SSAValue  # the first tile a later loop loads again: T where it fits, else H
    depth: int
    streamed: int  # S = D - H


def _held_values(loop: scf.ForOp, loops: int, depth: int, hold: int) -> _Held:
    """Before `loop` (a partition's first loop of the chain): T, `%resident` = T <= D, the
    program's ordinal p (`aref.ordinal`) and the bases `_apply_held` numbers from."""
    b = _Ops()
    trips = trip_count(loop.lb, loop.ub, loop.step)
    test = stays_in_ring(trips[-1].results[0], depth)
    b.ops += [*trips, *test]
    t, fits = trips[-1].results[0], test[-1].results[0]
    p = b.add(aref.OrdinalOp(), "ordinal")
    h = b.const(hold)
    fit_base = b.add(arith.MuliOp(p, t))
    held_base = b.add(arith.MuliOp(p, b.const(depth)))
    # the tiles past the held ones, per loop (0 where the row block fits: T <= D, H < D)
    past = b.add(arith.SubiOp(b.add(arith.MaxUIOp(t, h)), h))
    first = b.add(arith.MuliOp(p, b.const(loops)))
    bases = [
        b.add(arith.MuliOp(b.add(arith.AddiOp(first, b.const(k))) if k else first, past))
        for k in range(loops)
    ]
    first_moved = b.add(arith.SelectOp(fits, t, h))
    Rewriter.insert_op(b.ops, InsertPoint.before(loop))
    return _Held(fits, fit_base, held_base, bases, h, first_moved, depth, depth - hold)


class _Numbering:
    """The held rings' numbering values, made once per partition and loop for all the
    arefs of a kernel that share them (the same loops, depth and hold: a norm
    backward's x and dy), so that each ring does not hold its own copies in registers."""

    def __init__(self) -> None:
        self.values: dict[tuple, _Held] = {}
        self.indices: dict[tuple, tuple[SSAValue, SSAValue]] = {}

    def held(self, first: scf.ForOp, loops: int, depth: int, hold: int) -> _Held:
        key = (first, loops, depth, hold)
        if key not in self.values:
            self.values[key] = _held_values(first, loops, depth, hold)
        return self.values[key]

    def index(self, v: _Held, k: int, loop: scf.ForOp) -> tuple[SSAValue, SSAValue]:
        """At the top of `loop` (the k-th of the chain): `_held_index` of its iteration."""
        key = (loop, k, v.depth, v.streamed)
        if key not in self.indices:
            body = loop.body.block
            rel = arith.SubiOp(body.args[0], loop.lb)
            j = arith.DivUIOp(rel.result, loop.step)
            j.result.name_hint = "it"
            Rewriter.insert_op([rel, j], InsertPoint.at_start(body))
            nxt = j.next_op
            assert nxt is not None
            self.indices[key] = _held_index(v, k, j.result, nxt)
        return self.indices[key]


def _held_index(v: _Held, k: int, j: SSAValue, at: Operation) -> tuple[SSAValue, SSAValue]:
    """Before `at` (in loop k, at its iteration `j`): the ring index of the transfer and
    whether it moves through the streamed slots (the row block does not fit and j >= H).

    Where the row block fits: p * T + j, the numbering `persistent` gives a resident
    ring. Else tile j < H keeps slot j, its transfer numbered D * p + j (one use of the
    slot a program); the others are the streamed transfers c = (p * L + k) * (T - H) + j -
    H of the program's loops, through slots H..D-1: H + c mod S + D * (c / S). Each
    slot's transfers are numbered D apart, one use after the other, as `lower-aref`'s
    phases need."""
    b = _Ops()
    fit_index = b.add(arith.AddiOp(v.fit_base, j))
    held = b.add(arith.CmpiOp(j, v.hold, "ult"))
    held_index = b.add(arith.AddiOp(v.held_base, j))
    past = b.add(arith.SubiOp(b.add(arith.MaxUIOp(j, v.hold)), v.hold))
    c = b.add(arith.AddiOp(v.stream_bases[k], past))
    s = b.const(v.streamed)
    rnd = b.add(arith.DivUIOp(c, s))
    rem = b.add(arith.RemUIOp(c, s))
    streamed_index = b.add(
        arith.AddiOp(b.add(arith.AddiOp(v.hold, rem)), b.add(arith.MuliOp(rnd, b.const(v.depth))))
    )
    partly = b.add(arith.SelectOp(held, held_index, streamed_index))
    index = b.add(arith.SelectOp(v.fits, fit_index, partly), "slot_it")
    moved = b.add(arith.CmpiOp(j, v.first_moved, "uge"), "streamed")
    Rewriter.insert_op(b.ops, InsertPoint.before(at))
    return index, moved


def _apply_held(chain: Rereads, depth: int, hold: int, hints: bool, numbering: _Numbering) -> None:
    """A resident ring whose program's first `hold` tiles keep their slots where its row
    block is longer than the ring (`ArefPlan.hold`): the producer's later loops load only
    the other tiles again, through the other D - H slots; the consumer's loops but the
    last release only those. Where the row block fits, as `_apply`."""
    loops = len(chain.puts)
    pv = numbering.held(chain.producer_loops[0], loops, depth, hold)
    for k, (put, loop) in enumerate(zip(chain.puts, chain.producer_loops, strict=True)):
        index, moved = numbering.index(pv, k, loop)
        l2 = ("evict_last" if k == 0 else "evict_first") if hints else None
        _replace(
            put,
            aref.PutOp(
                put.aref,
                index,
                list(put.values),
                moved if k else None,
                l2,
                moved if hints and k == 0 else None,
            ),
        )
    cv = numbering.held(chain.consumer_loops[0], loops, depth, hold)
    for k, (get, release, loop) in enumerate(
        zip(chain.gets, chain.releases, chain.consumer_loops, strict=True)
    ):
        index, moved = numbering.index(cv, k, loop)
        get.operands = [get.aref, index]
        last = k == loops - 1
        _replace(release, aref.ConsumedOp(release.aref, index, when=None if last else moved))


def _stores_first(kernel: tile.KernelOp) -> None:
    """Every global store of `kernel` lets its lines leave L2 first (`evict_first`): a
    row kernel writes each output once, and its lines would push out the row blocks its
    later loops read again."""
    for st in kernel.walk():
        if isinstance(st, tile.StoreOp):
            st.properties["l2"] = StringAttr("evict_first")


def _replace(old: Operation, new: Operation) -> None:
    new.location = old.location
    new.attributes.update(old.attributes)
    Rewriter.replace_op(old, new)


@dataclass(frozen=True)
class ReuseSlotsPass(ModulePass):
    """Applies the `resident` arefs of `#tawac.schedule` (nothing to do where none is)."""

    name = "reuse-slots"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            plan = schedule.of(kernel)
            numbering = _Numbering()
            for create in [o for o in kernel.walk() if isinstance(o, aref.CreateOp)]:
                decided = plan.aref(create.ident)
                if decided is None or not decided.resident:
                    continue
                chain = rereads(create)
                if isinstance(chain, str):
                    raise CompileError(
                        f"reuse-slots: aref '{create.ident}' is resident in the schedule, "
                        f"but {chain}",
                        create,
                    )
                _apply(create, chain, decided.l2, decided.hold, numbering)
            if any(a.resident and a.l2 for a in plan.arefs):
                _stores_first(kernel)
