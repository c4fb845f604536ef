"""The reference interpreter's scalar atomics and `scf.while` (`tawac.runtime.interpret`).

A kernel with a scalar atomic (`tile.atomic_cas`, `tile.atomic_xchg`: a lock) runs its
programs one after another, each alone (`serial`, `one_by_one`): a program that takes a
lock finds it free, since every earlier program released it before ending, so a spin
loop ends at its first iteration, as on the GPU once the lock is free. (In lockstep the
programs waiting for a lock would never see its holder release it.) The atomics are
exact: the old value is the result (-1 outside the tensor, where nothing is written), a
compare-and-swap writes where the element equals `cmp`, an exchange always writes; the
index operands are taken as i32 (wrapped), as the lowering's `atom...b32` takes them.

`scf.while` runs as `scf.for` does, in lockstep over the active instances: each
iteration runs the condition's region, the instances whose condition is false leave with
the values `scf.condition` forwards (the loop's results), the others run the body. An
iteration that changes nothing (no instance's loop-carried values, no element a scalar
atomic writes) and writes nothing else would repeat forever: an `InterpretError` (a lock
that no program releases; one held by a later program, which the serial run cannot
reach), not a hang; so is a loop past `MAX_ITERATIONS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from xdsl.dialects import scf
from xdsl.ir import Operation

from tawac.dialects import tile
from tawac.support.diagnostics import location_of

#: Iterations after which a `scf.while` is taken not to end.
MAX_ITERATIONS = 1 << 20

#: Ops that write memory, but the scalar atomics (whose writes `exchange` counts).
_WRITES = (tile.StoreOp, tile.AtomicAddOp, tile.ArriveOp, tile.SplitSoftmaxOp)


def serial(kernel: tile.KernelOp) -> bool:
    """Whether the kernel's programs run one after another (it has a scalar atomic)."""
    return any(isinstance(o, tile.SCALAR_ATOMICS) for o in kernel.walk())


def one_by_one(
    grid: tuple[int, int, int], device: torch.device
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The program ids (x, y, z) of each program of `grid` in program order (x fastest),
    as one-instance tensors."""
    gx, gy, gz = grid
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                yield tuple(torch.tensor([v], dtype=torch.int64, device=device) for v in (x, y, z))


def _i32(v: int) -> int:
    """`v` as the two's-complement 32-bit integer an `i32` element holds."""
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def exchange(interp: Any, op: tile.AtomicCasOp | tile.AtomicXchgOp, active: torch.Tensor):
    """`tile.atomic_cas` / `tile.atomic_xchg` in each active instance, in program order
    (instance index); returns the old values (-1 where inactive or outside the tensor)."""
    t = interp.get(op.target)
    coords = [interp.get(i) for i in op.indices]
    inside = active.clone()
    for d, c in enumerate(coords):
        inside &= (c >= 0) & (c < t.shape[d])
    old = torch.full((interp.n,), -1, dtype=torch.int64, device=interp.device)
    value = interp.get(op.value)
    cmp = interp.get(op.cmp) if isinstance(op, tile.AtomicCasOp) else None
    for i in inside.nonzero().flatten().tolist():
        at = tuple(int(c[i]) for c in coords)
        was = int(t[at])
        old[i] = was
        if cmp is not None and was != _i32(int(cmp[i])):
            continue
        new = _i32(int(value[i]))
        if new != was:
            interp.atomic_writes = getattr(interp, "atomic_writes", 0) + 1
        t[at] = new
    return old


def _writes_memory(op: scf.WhileOp) -> bool:
    """Whether the loop's regions hold an op that writes memory (but scalar atomics)."""
    return any(isinstance(o, _WRITES) for o in op.walk())


def run_while(interp: Any, op: scf.WhileOp, active: torch.Tensor) -> None:
    """`scf.while` in lockstep (module docstring)."""
    before, after = op.before_region.block, op.after_region.block
    values = [interp.get(v) for v in op.arguments]
    live = active
    results: list[Any] | None = None
    watch = not _writes_memory(op)
    for _ in range(MAX_ITERATIONS):
        writes = getattr(interp, "atomic_writes", 0)
        for arg, v in zip(before.args, values, strict=True):
            interp.env[arg] = v
        cond, forwarded = _condition(interp, before, live)
        leaving = live & ~cond
        results = forwarded if results is None else _where(leaving, forwarded, results)
        live = live & cond
        if not bool(live.any()):
            break
        for arg, v in zip(after.args, forwarded, strict=True):
            interp.env[arg] = v
        new = interp.run_block(after, live)
        still = watch and getattr(interp, "atomic_writes", 0) == writes
        if still and all(torch.equal(a[live], b[live]) for a, b in zip(new, values, strict=True)):
            raise _stuck(op)
        values = _where(live, new, values)
    else:
        raise _stuck(op, MAX_ITERATIONS)
    assert results is not None
    for r, v in zip(op.res, results, strict=True):
        interp.env[r] = v


def _condition(interp: Any, block, live: torch.Tensor) -> tuple[torch.Tensor, list[Any]]:
    """The condition's region run under `live`: `scf.condition`'s flag and values."""
    for o in block.ops:
        if isinstance(o, scf.ConditionOp):
            return interp.get(o.condition), [interp.get(v) for v in o.args]
        interp.run_op(o, live)
    raise AssertionError("scf.while: a condition region without scf.condition")


def _where(mask: torch.Tensor, new: list[Any], old: list[Any]) -> list[Any]:
    """Per instance, `new` where `mask` holds, else `old`."""
    out = []
    for a, b in zip(new, old, strict=True):
        m = mask.view(mask.shape[0], *([1] * (a.dim() - 1)))
        out.append(torch.where(m, a, b))
    return out


class NeverEnds(Exception):
    """A `scf.while` that would repeat forever (`run_while`); the interpreter reports it
    as an `InterpretError`."""


def _stuck(op: Operation, iterations: int | None = None) -> NeverEnds:
    where = location_of(op)
    at = f" at {where}" if where is not None else ""
    if iterations is not None:
        return NeverEnds(f"scf.while{at}: no end after {iterations} iterations")
    return NeverEnds(
        f"scf.while{at}: an iteration changed nothing, so the loop never ends (a lock that "
        "no program releases, or one a later program would release: the interpreter runs "
        "the programs of a kernel with scalar atomics one after another)"
    )
