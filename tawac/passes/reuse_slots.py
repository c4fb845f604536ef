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
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr
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


def _apply(create: aref.CreateOp, chain: Rereads, hints: bool) -> None:
    depth = create.aref_type.depth.data
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
                _apply(create, chain, decided.l2)
            if any(a.resident and a.l2 for a in plan.arefs):
                _stores_first(kernel)
