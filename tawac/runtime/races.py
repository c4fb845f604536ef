"""Races between programs in the reference interpreter (`tawac.runtime.interpret`): a
store after which an element's final value depends on the programs' order.

On the GPU an element that several programs store keeps the last value of whichever
writing program stores last, so a program whose programs end on different values there
has no one result: no pass can be checked against it, and a fuzz mutant that does this
is a program without a meaning, not a pass that changed it. `Writers` keeps, per tensor,
each element's last writer and whether other programs wrote it too: while only one
program has written an element it may write it again (its program order decides); once
several have, every write must leave the value there (they all end on it); two programs
writing different values in one op race. A program that writes an element another
program wrote, with another value, is refused even where it writes that value back later
(conservative). The programs of a kernel with scalar atomics run one by one, each in a
run of its own, so a lock's critical sections are not compared.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.ir import SSAValue


class RaceError(Exception):
    """Two programs store different values to one element (the interpreter raises it as
    its `InterpretError`)."""


def _same(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a == b) | (torch.isnan(a.float()) & torch.isnan(b.float()))


class Writers:
    """Each stored tensor's elements' last writers (program instances) in one run."""

    def __init__(self, device: torch.device):
        self.device = device
        self.held: dict[int, tuple[Any, torch.Tensor, torch.Tensor]] = {}

    def claim(
        self,
        dest: SSAValue,
        g: torch.Tensor,
        flat: torch.Tensor,
        index: tuple,
        value: torch.Tensor,
        inst: torch.Tensor,
        n: int,
    ) -> None:
        """Records a store of `value` (already in g's dtype) by instances `inst` to the
        row-major elements `flat` of `g` (`index` addresses them in g), one of `n`
        instances; `RaceError` where it races (the module docstring)."""
        if n < 2 or flat.numel() == 0:
            return
        held = self.held.get(id(g))
        if held is None or held[0] is not g:
            owner = torch.full((g.numel(),), -1, dtype=torch.int64, device=self.device)
            shared = torch.zeros(g.numel(), dtype=torch.bool, device=self.device)
            held = (g, owner, shared)
            self.held[id(g)] = held
        _, owner, shared = held
        view = g.view(-1) if g.is_contiguous() else g
        before = owner[flat]
        alone = (before == inst) & ~shared[flat]
        clash = (before >= 0) & ~alone & ~_same(view[index], value)
        order = torch.argsort(flat, stable=True)
        f, i, v = flat[order], inst[order], value[order]
        twice = (f[1:] == f[:-1]) & (i[1:] != i[:-1])
        pair = twice & ~_same(v[1:], v[:-1])
        if bool(clash.any()):
            k = int(clash.nonzero()[0])
            a, b, at = int(before[k]), int(inst[k]), int(flat[k])
        elif bool(pair.any()):
            k = int(pair.nonzero()[0])
            a, b, at = int(i[k]), int(i[k + 1]), int(f[k])
        else:
            shared[flat[(before >= 0) & (before != inst)]] = True
            shared[f[1:][twice]] = True
            owner[flat] = inst
            return
        where = [int(c) for c in torch.unravel_index(torch.tensor(at), g.shape)]
        name = dest.name_hint or "a tensor"
        raise RaceError(
            f"tile.store: programs {a} and {b} both write {name}{where} with different "
            "values: the result depends on their order (a race between programs)"
        )
