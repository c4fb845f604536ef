"""The reference interpreter on warp-specialized kernels: partitions and arefs
(`tawac.runtime.interpret`), so that the passes from `warp-specialize` to
`reread-slots` are checked as the tile-level ones are (`tawac.check.validate`).

A partitioned kernel (`aref.partition` producer and consumer, `aref.create` rings) runs
its partitions one after another in the order the kernel lists them (the producer's
first), each vectorized over the program instances as the interpreter runs any block.
An aref is modelled by its transfers, not its slots: `aref.put %r[%i]` records the
payload of transfer i (per instance), `aref.get %r[%i]` returns it, `aref.consumed
%r[%i]` marks it released. Running the producer to its end first is what the ring
computes wherever the protocol holds, which the model checks (an `InterpretError`
naming the op, else):

- a get reads a transfer that was put and not yet released (on the GPU, slot i mod D
  holds transfer i from its put until the put of i + D, which waits for i's release),
  and no op reads its payload once that transfer is released (`check_reads`: the
  payload is borrowed in place until then);
- a transfer is put once and released at most once (`when` predicates respected: a put
  or a release that does not happen is none); a get `again` (no wait) reads a transfer
  an earlier get received;
- after the run, transfer i + D (D the ring's depth) is put only where transfer i was
  put and released: else the producer would wait for the slot forever, or the slot's
  barriers would be a phase behind its numbering.

The producer's loads then read memory before the consumer's stores, as on the GPU,
where the producer runs up to D transfers ahead of them. `hopper.cta_id` and
`hopper.num_ctas` (a persistent kernel's tile loop) are the instance's program id x and
the grid's size (a kernel with a lock runs its CTAs one after another, each alone);
`tawac.check.validate.interpret_partitioned` runs such a kernel on a few CTAs, each
looping over several of the program grid's tiles. `hopper.wgmma_wait` returns its
accumulator (the MMA's result is the `tile.dot`'s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.ir import Operation

from tawac.dialects import aref, hopper, tile
from tawac.support.diagnostics import location_of

#: The ops this module evaluates.
OPS = (
    aref.CreateOp,
    aref.PartitionOp,
    aref.PutOp,
    aref.GetOp,
    aref.ConsumedOp,
    aref.OrdinalOp,
    hopper.CtaIdOp,
    hopper.NumCtasOp,
    hopper.WgmmaWaitOp,
)


class ProtocolError(RuntimeError):
    """A partitioned kernel breaks the aref protocol (the module docstring)."""


@dataclass
class _Transfer:
    payload: list[torch.Tensor]
    put: torch.Tensor  # bool (P,): put by this instance
    released: torch.Tensor  # bool (P,)
    received: torch.Tensor  # bool (P,): read by a get that waited


@dataclass
class Ring:
    """An aref's transfers, by index."""

    name: str
    depth: int
    transfers: dict[int, _Transfer] = field(default_factory=dict)
    # (partition, kind: "put" | "get" | "release", index, mask), in the order each
    # partition ran them: `_deadlock` replays them against the ring's waits
    events: list[tuple[int, str, torch.Tensor, torch.Tensor]] = field(default_factory=list)


def _where(op: Operation) -> str:
    loc = location_of(op)
    return f"{op.name} at {loc}" if loc else op.name


def _selected(index: torch.Tensor, mask: torch.Tensor):
    """(transfer number, instances) for each transfer number `index` takes where `mask`."""
    for t in sorted({int(v) for v in index[mask].tolist()}):
        yield t, mask & (index == t)


def _mask(interp: Any, active: torch.Tensor, when: Any) -> torch.Tensor:
    return active if when is None else active & interp.get(when)


def eval_op(interp: Any, op: Operation, active: torch.Tensor) -> Any:
    """Evaluates one of `OPS` in the interpreter `interp`; returns its single result or
    None (`interp.env` set for several)."""
    if isinstance(op, aref.CreateOp):
        t = op.aref_type
        return Ring(op.ident or "aref", t.depth.data)
    if isinstance(op, aref.PartitionOp):
        interp.partition = getattr(interp, "partition", -1) + 1
        interp.run_block(op.body.block, active)
        return None
    if isinstance(op, aref.OrdinalOp):  # one program per instance (before `persistent`)
        return interp.full_index(0)
    if isinstance(op, hopper.CtaIdOp):  # a one-dimensional launch's (the grid's x)
        return interp.program_ids(0)
    if isinstance(op, hopper.NumCtasOp):
        return interp.full_index(interp.grid[0] * interp.grid[1] * interp.grid[2])
    if isinstance(op, hopper.WgmmaWaitOp):
        return interp.get(op.acc)
    ring: Ring = interp.get(op.aref)
    index = interp.get(op.index)
    who = getattr(interp, "partition", 0)
    if isinstance(op, aref.PutOp):
        mask = _mask(interp, active, op.when)
        ring.events.append((who, "put", index.clone(), mask.clone()))
        _put(interp, op, ring, index, mask)
        return None
    if isinstance(op, aref.GetOp):
        if op.again is None:  # a get `again` does not wait
            ring.events.append((who, "get", index.clone(), active.clone()))
        _get(interp, op, ring, index, active)
        return None
    assert isinstance(op, aref.ConsumedOp)
    mask = _mask(interp, active, op.when)
    ring.events.append((who, "release", index.clone(), mask.clone()))
    _release(op, ring, index, mask)
    return None


def _put(interp: Any, op: aref.PutOp, ring: Ring, index: torch.Tensor, mask: torch.Tensor):
    values = [interp.get(v) for v in op.values]
    for t, sel in _selected(index, mask):
        tr = ring.transfers.get(t)
        if tr is None:
            none = torch.zeros_like(sel)
            tr = ring.transfers[t] = _Transfer(
                [torch.zeros_like(v) for v in values], none, none.clone(), none.clone()
            )
        if bool((tr.put & sel).any()):
            raise ProtocolError(f"{_where(op)}: transfer {t} of aref {ring.name} is put twice")
        for buf, v in zip(tr.payload, values, strict=True):
            buf[sel] = v[sel]
        tr.put |= sel


def _get(interp: Any, op: aref.GetOp, ring: Ring, index: torch.Tensor, active: torch.Tensor):
    outs: list[torch.Tensor | None] = [None] * len(op.values)
    for t, sel in _selected(index, active):
        tr = _held(op, ring, t, sel, "reads", "after its release")
        if op.again is None:
            tr.received |= sel
        elif not bool(tr.received[sel].all()):
            raise ProtocolError(
                f"{_where(op)}: reads transfer {t} of aref {ring.name} again (without "
                "waiting), but no get received it before"
            )
        for k, buf in enumerate(tr.payload):
            if outs[k] is None:
                outs[k] = torch.zeros_like(buf)
            outs[k][sel] = buf[sel]
    for r, out in zip(op.values, outs, strict=True):
        if out is None:  # no active instance: any value serves
            shape = (interp.n, *r.type.get_shape())
            out = torch.zeros(shape, dtype=torch.float32, device=interp.device)
        interp.env[r] = out
        interp.borrowed[r] = (ring, index.clone(), active.clone(), op)


def _release(op: aref.ConsumedOp, ring: Ring, index: torch.Tensor, mask: torch.Tensor):
    for t, sel in _selected(index, mask):
        _held(op, ring, t, sel, "releases", "twice").released |= sel


def _held(op: Operation, ring: Ring, t: int, sel: torch.Tensor, verb: str, late: str):
    """Transfer `t` of `ring`, put and not yet released by the instances `sel`, which
    `op` reads or releases (`verb`); else the breach (`late`: how a second release or a
    read after the release is told)."""
    what = f"{_where(op)}: {verb} transfer {t} of aref {ring.name}"
    tr = ring.transfers.get(t)
    if tr is None or not bool(tr.put[sel].all()):
        raise ProtocolError(f"{what}, which was not put")
    if bool((tr.released & sel).any()):
        raise ProtocolError(f"{what} {late}")
    return tr


def finish(interp: Any) -> None:
    """After the run: every transfer i + D was put only where transfer i was put and
    released (the slot's uses one after the other: a skipped one would leave its
    barriers a phase behind, so that a wait for the next passed on an old phase)."""
    rings = [v for v in interp.env.values() if isinstance(v, Ring)]
    for ring in rings:
        for t, tr in ring.transfers.items():
            if t < ring.depth:
                continue
            before = ring.transfers.get(t - ring.depth)
            skipped = tr.put if before is None else tr.put & ~before.put
            if bool(skipped.any()):
                raise ProtocolError(
                    f"aref {ring.name}: transfer {t} is put into the slot of transfer "
                    f"{t - ring.depth}, which was never put (depth {ring.depth}): the "
                    "slot's barriers would be a phase behind"
                )
            stuck = tr.put & ~before.released
            if bool(stuck.any()):
                raise ProtocolError(
                    f"aref {ring.name}: transfer {t} is put into the slot of transfer "
                    f"{t - ring.depth}, which is never released (depth {ring.depth}): the "
                    "producer would wait forever"
                )
    _deadlock(rings)


def _deadlock(rings: list[Ring]) -> None:
    """Each instance's partitions, run side by side against the rings' waits (a put of
    transfer i waits for the release of i - D, a get for the put of i), reach their ends:
    the order in which the producer fills slots and the consumers release them does not
    leave both waiting on each other (the run itself put every transfer before any get,
    which only a ring deep enough for all of them would allow)."""
    if not rings or not any(r.events for r in rings):
        return
    names = {id(r): r for r in rings}
    per: dict[int, list[tuple[int, str, list[int], list[bool]]]] = {}
    n = 0
    for r in rings:
        for who, kind, index, mask in r.events:
            per.setdefault(who, []).append((id(r), kind, index.tolist(), mask.tolist()))
            n = len(mask)
    seqs = list(per.values())
    for inst in range(n):
        todo = [[(rid, kind, ix[inst]) for rid, kind, ix, m in seq if m[inst]] for seq in seqs]
        at = [0] * len(todo)
        put: set[tuple[int, int]] = set()
        released: set[tuple[int, int]] = set()
        moved = True
        while moved:
            moved = False
            for p, events in enumerate(todo):
                while at[p] < len(events):
                    rid, kind, i = events[at[p]]
                    depth = names[rid].depth
                    if kind == "put" and i >= depth and (rid, i - depth) not in released:
                        break
                    if kind == "get" and (rid, i) not in put:
                        break
                    if kind == "put":
                        put.add((rid, i))
                    elif kind == "release":
                        released.add((rid, i))
                    at[p] += 1
                    moved = True
        stuck = [(p, events[at[p]]) for p, events in enumerate(todo) if at[p] < len(events)]
        if stuck:
            waits = "; ".join(
                f"partition {p} at its {kind} of transfer {i} of aref {names[rid].name}"
                for p, (rid, kind, i) in stuck
            )
            raise ProtocolError(
                f"the partitions wait on each other (program instance {inst}): {waits}"
            )


def check_reads(interp: Any, op: Operation) -> None:
    """`op` reads no get's payload whose transfer its slot's release has ended (the
    payload is borrowed in place until then)."""
    for v in op.operands:
        held = interp.borrowed.get(v)
        if held is None:
            continue
        ring, index, mask, get = held
        for t, sel in _selected(index, mask):
            if bool((ring.transfers[t].released & sel).any()):
                raise ProtocolError(
                    f"{_where(op)}: reads the payload of {_where(get)} (transfer {t} of "
                    f"aref {ring.name}) after its release"
                )


def partitioned(kernel: tile.KernelOp) -> bool:
    return any(isinstance(o, aref.PartitionOp) for o in kernel.body.block.ops)


__all__ = [
    "OPS",
    "ProtocolError",
    "Ring",
    "check_reads",
    "eval_op",
    "finish",
    "partitioned",
]
