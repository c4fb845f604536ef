"""`trace{slots=4096 ctas=132 every=1}`: an instrumented build.

Runs last before `convert-to-ptx` (after `lower-aref`, `pingpong` and `tma-store`, so
every boundary it marks is the one the PTX has) when the pipeline knob `trace` is on.
It inserts a `hopper.trace` stamp before and after each

- aref get (the consumer's wait on a full barrier): `get <aref>`,
- producer acquire (its wait on an empty barrier): `acquire <aref>`,
- aref put (`arrive.expect_tx` and the TMA loads that complete on it): `put <aref>`,
- aref release (the consumer's arrive on an empty barrier, and a cluster peer's):
  `consumed <aref>`,
- MMA issue (`hopper.wgmma`): `mma <result>`, and MMA wait (`hopper.wgmma_wait`):
  `mma.wait <result>`,

and at the start and end of each iteration of every main loop (an `scf.for` whose body
holds one of those ops directly): `iteration <loop>`, and around a consumer's epilogue
(the ops after its main loops in the tile body): `epilogue`; around a split tile's
ticket (`tile.arrive`): `arrive`, and its last program's sum or combine
(`tile.split_sum`, `tile.split_softmax`): `combine`.

Each stamp carries an event id; the event table goes on the kernel as the attribute
`tawac.runtime.trace` ({slots, ctas, every, roles, events}), which `convert-to-ptx` copies into
the launch sidecar (docs/abi.md, "trace"). An event is {id, name, role, wg, op, edge,
span, loop, sampled}: `edge` is "begin" or "end", and the two stamps of one span share
`span`; `wg` is the first warp group of its partition; `loop` is the loop's index in
its partition (-1 outside a main loop). Events 0 and 1 (op `sync`) are the span of each
warp group's whole partition, stamped by the lowering itself: the records that pair
`%globaltimer` with `%clock64`, so every other stamp reads the cheap `%clock64` only.
The aref's name is that of the kernel arguments its TMA loads read (`a_b`), as
`warp-specialize` names it.

`every` samples (a power of two): with `every` > 1 only the iteration spans of the main
loops and the epilogue are stamped, and inside an innermost main loop the stamps are
stored on every `every`-th iteration only (`sampled` marks those events; each record
carries its loop's iteration count): the measurement of steady states, with as few
instructions and registers in the loop as the iteration boundaries need. `every` = 1
stamps every boundary above, for pictures (its stamps cost registers: a kernel near its
register budget may spill under it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tawac.analysis.grid import to_attr
from tawac.dialects import aref, hopper, tile
from tawac.support.diagnostics import CompileError

#: Bytes of one record (docs/abi.md, "trace").
RECORD_BYTES = 16

_LOADS = (hopper.TmaLoadOp, hopper.TmaLoadMulticastOp)
_ARRIVES = (hopper.MbarrierArriveOp, hopper.MbarrierArriveRemoteOp)
_MARKED = (
    hopper.MbarrierWaitOp,
    hopper.MbarrierArriveExpectTxOp,
    *_ARRIVES,
    hopper.WgmmaOp,
    hopper.WgmmaWaitOp,
)


@dataclass(frozen=True)
class TracePass(ModulePass):
    name = "trace"

    slots: int = 4096
    """Records kept per (CTA, warp group): a ring, the last `slots` stamps survive."""
    ctas: int = 132
    """CTAs that record (linear CTA index < ctas); the others run uninstrumented work."""
    every: int = 1
    """Innermost main loops store their stamps on every `every`-th iteration only."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.slots < 2 or self.slots & (self.slots - 1) or self.slots > 1 << 20:
            raise CompileError(
                f"trace: slots must be a power of two from 2 to 2^20, got {self.slots}"
            )
        if self.ctas < 1:
            raise CompileError(f"trace: ctas must be >= 1, got {self.ctas}")
        if self.every < 1 or self.every & (self.every - 1) or self.every > 1 << 16:
            raise CompileError(f"trace: every must be a power of two <= 2^16, got {self.every}")
        for kernel in [o for o in op.walk() if isinstance(o, tile.KernelOp)]:
            instrument(kernel, self.slots, self.ctas, self.every)


@dataclass
class _Sites:
    """The stamps of one kernel: (op, "before"|"after", event id) and the event table."""

    stamps: list[tuple[Operation, str, int]]
    events: list[dict[str, Any]]
    spans: int = 0
    wg: int = 0
    """The first warp group of the partition whose stamps are being added."""
    innermost: frozenset[int] = frozenset()
    """Its main loops (indices) that hold no other main loop: the sampled ones."""
    every: int = 1

    def _stamp(self, at: Operation, where: str, role: str, op: str, label: str, loop, edge):
        """One stamp `where` ("before" or "after") `at`, its event in the current span."""
        self.stamps.append((at, where, len(self.events)))
        self.events.append(
            {
                "id": len(self.events),
                "name": f"{op} {label}".strip(),
                "role": role,
                "wg": self.wg,
                "op": op,
                "span": self.spans,
                "loop": loop,
                "sampled": self.every > 1 and loop in self.innermost,
                "edge": edge,
            }
        )
        if len(self.events) > 1 << 16:
            raise CompileError("trace: more than 65536 events in one kernel", None)

    def span(self, first: Operation, last: Operation, role: str, op: str, label: str, loop):
        """A span: a stamp before `first` (edge "begin") and after `last` ("end")."""
        self._stamp(first, "before", role, op, label, loop, "begin")
        self._stamp(last, "after", role, op, label, loop, "end")
        self.spans += 1

    def tick(self, at: Operation, where: str, role: str, op: str, label: str, loop: int):
        """One stamp `where` ("before" or "after") `at` (edge "at": an instant)."""
        self._stamp(at, where, role, op, label, loop, "at")
        self.spans += 1


#: The events every traced kernel has first: the span of a warp group's partition, whose
#: two records pair `%globaltimer` with `%clock64` (stamped by the lowering).
SYNC_EVENTS = (
    {"id": 0, "name": "warp group", "role": "", "wg": -1, "op": "sync", "span": 0,
     "loop": -1, "sampled": False, "edge": "begin"},
    {"id": 1, "name": "warp group", "role": "", "wg": -1, "op": "sync", "span": 0,
     "loop": -1, "sampled": False, "edge": "end"},
)  # fmt: skip


def instrument(kernel: tile.KernelOp, slots: int, ctas: int, every: int = 1) -> None:
    """Stamps in every partition of `kernel` and its event table (`tawac.runtime.trace`)."""
    if hopper.TRACE_ATTR in kernel.attributes:
        return  # instrumented already
    parts = [p for p in kernel.body.block.ops if isinstance(p, aref.PartitionOp)]
    if not parts:
        raise CompileError("trace: the kernel has no partitions; run lower-aref first", kernel)
    names = _aref_names(kernel)
    sites = _Sites([], [dict(e) for e in SYNC_EVENTS], spans=1, every=every)
    for p in parts:
        _partition_sites(p, names, sites)
        sites.wg += p.warp_groups.data
    for at, where, event in sites.stamps:
        point = InsertPoint.before(at) if where == "before" else InsertPoint.after(at)
        Rewriter.insert_op(hopper.TraceOp(event), point)
    roles = [p.role.data for p in parts for _ in range(p.warp_groups.data)]
    if ctas * len(roles) * (slots + 2) * RECORD_BYTES > 1 << 32:
        raise CompileError(
            f"trace: {ctas} CTAs x {len(roles)} warp groups x {slots} slots exceed the "
            "4 GiB a stamp's 32-bit offset reaches; use fewer slots or CTAs",
            kernel,
        )
    table = {
        "slots": slots,
        "ctas": ctas,
        "every": every,
        "record_bytes": RECORD_BYTES,
        "warp_groups": len(roles),
        "roles": roles,
        "events": sites.events,
    }
    kernel.attributes[hopper.TRACE_ATTR] = to_attr(table)


def _main_loops(p: aref.PartitionOp) -> list[scf.ForOp]:
    return [
        o
        for o in p.walk()
        if isinstance(o, scf.ForOp) and any(isinstance(x, _MARKED) for x in o.body.block.ops)
    ]


def _releases_only(lp: scf.ForOp) -> bool:
    """Whether the loop's marked ops are all releases (`aref.consumed`'s arrives): the
    drain after a loop that keeps its last MMAs in flight, which runs before their wait."""
    marked = [x for x in lp.body.block.ops if isinstance(x, _MARKED)]
    return all(isinstance(x, _ARRIVES) for x in marked)


def _partition_sites(p: aref.PartitionOp, names: dict[SSAValue, str], sites: _Sites) -> None:
    role = p.role.data
    loops = _main_loops(p)
    if sites.every > 1:
        # a sampled build does not tick a drain of releases: it runs while the last MMAs
        # are in flight, and advancing the ring there makes ptxas serialize every MMA of
        # the kernel (C7514); its iterations are no steady state anyway
        loops = [lp for lp in loops if not _releases_only(lp)]
    index = {lp: i for i, lp in enumerate(loops)}
    sites.innermost = frozenset(
        i for i, lp in enumerate(loops) if not any(o in index for o in lp.body.walk())
    )

    def loop_of(o: Operation) -> int:
        parent = o.parent_op()
        while parent is not None and parent is not p:
            if parent in index:
                return index[parent]  # type: ignore[index]
            parent = parent.parent_op()
        return -1

    for lp in loops:
        body = lp.body.block
        first, last = body.first_op, body.last_op
        assert first is not None and last is not None
        # begin before the first op, end before the yield: marks a span from the yield's
        # predecessor; an empty body has nothing to time
        if not isinstance(last, scf.YieldOp) or last.prev_op is None:
            continue
        if sites.every > 1:
            sites.tick(last.prev_op, "after", role, "iteration", f"loop{index[lp]}", index[lp])
            sites.events[-1]["step"] = _constant_step(lp)
        else:
            sites.span(first, last.prev_op, role, "iteration", f"loop{index[lp]}", index[lp])
            sites.events[-2]["step"] = sites.events[-1]["step"] = _constant_step(lp)
    if sites.every > 1:
        # a sampled build measures steady states: one stamp per iteration, at the end of
        # its body, and the epilogue; nothing else. A stamp pins the code around it (the
        # timer is volatile): at the top of a body it keeps ptxas from overlapping the
        # iterations and spills where registers are tight
        blocks: list[Block] = []
    else:
        blocks = _blocks(p)
    for block in blocks:
        ops = list(block.ops)
        i = 0
        while i < len(ops):
            o = ops[i]
            j = i
            if isinstance(o, hopper.MbarrierArriveExpectTxOp):
                while j + 1 < len(ops) and isinstance(ops[j + 1], _LOADS):
                    j += 1
                sites.span(o, ops[j], role, "put", names.get(o.bars, ""), loop_of(o))
            elif isinstance(o, hopper.MbarrierWaitOp):
                what = "acquire" if role == "producer" else "get"
                sites.span(o, o, role, what, names.get(o.bars, ""), loop_of(o))
            elif isinstance(o, _ARRIVES):
                while j + 1 < len(ops) and isinstance(ops[j + 1], _ARRIVES):
                    j += 1
                sites.span(o, ops[j], role, "consumed", names.get(o.bars, ""), loop_of(o))
            elif isinstance(o, hopper.WgmmaOp | hopper.WgmmaWaitOp):
                what = "mma" if isinstance(o, hopper.WgmmaOp) else "mma.wait"
                label = o.results[0].name_hint or ""
                sites.span(o, o, role, what, label, loop_of(o))
            i = j + 1
    if role == "consumer" and loops:
        _epilogue(loops, p, role, sites)
    for o in p.walk():  # a split tile's ticket and its last program's combine
        if isinstance(o, tile.ArriveOp | tile.SplitSumOp | tile.SplitSoftmaxOp):
            what = "arrive" if isinstance(o, tile.ArriveOp) else "combine"
            sites.span(o, o, role, what, "", -1)


def _constant_step(lp: scf.ForOp) -> int:
    """The loop's step where it is a constant power of two (the lowering then counts
    iterations by the induction variable), else 0 (by a counter of its own)."""
    owner = lp.step.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, IntegerAttr):
        return 0
    step = owner.value.value.data
    return step if step > 0 and step & (step - 1) == 0 else 0


def _blocks(p: aref.PartitionOp) -> list[Block]:
    out: list[Block] = []
    for o in [p, *p.walk()]:
        for r in o.regions:
            out.extend(r.blocks)
    return out


def _epilogue(loops: list[scf.ForOp], p: aref.PartitionOp, role: str, sites: _Sites) -> None:
    """A span over the ops after the last main loop in the block of the tile loop's body
    (or the partition's), up to its terminator."""
    anchor: Operation = loops[-1]
    while True:
        parent = anchor.parent_op()
        if parent is None or parent is p or isinstance(parent, scf.ForOp):
            break
        anchor = parent
    block = anchor.parent_block()
    assert block is not None
    last = block.last_op
    if isinstance(last, scf.YieldOp):
        last = last.prev_op
    first = anchor.next_op
    # the waits for the loop's last MMAs come first: a stamp between an MMA in flight and
    # its wait makes ptxas serialize the MMAs (C7514)
    while first is not None and first is not last and isinstance(first, hopper.WgmmaWaitOp):
        first = first.next_op
    if last is None or last is anchor or first is None:
        return
    sites.span(first, last, role, "epilogue", "", -1)


def _aref_names(kernel: tile.KernelOp) -> dict[SSAValue, str]:
    """Each aref's full and empty mbarriers -> its name: the kernel arguments its TMA
    loads read (`a_b`), else `aref<i>` in allocation order."""
    allocs = [o for o in kernel.body.block.ops if isinstance(o, hopper.MbarrierAllocOp)]
    sources: dict[SSAValue, list[str]] = {}
    for o in kernel.walk():
        if isinstance(o, _LOADS):
            arg = o.source.name_hint or "?"
            seen = sources.setdefault(o.bars, [])
            if arg not in seen:
                seen.append(arg)
    names: dict[SSAValue, str] = {}
    # lower-aref allocates each aref's full then its empty mbarriers
    for i in range(0, len(allocs) - 1, 2):
        full, empty = allocs[i].result, allocs[i + 1].result
        name = "_".join(sources.get(full, [])) or f"aref{i // 2}"
        names[full] = names[empty] = name
    return names
