"""The interpreter's scalar atomics and `scf.while` (tawac/runtime/atomics.py): a
compare-and-swap returns the old value and writes only where it equals `cmp`, an exchange
returns the old value and writes, both -1 outside the tensor (nothing written); a kernel
with them runs its programs one after another, so a lock is free whenever a program takes
it and a count kept under it counts every program; `scf.while` runs in lockstep with
carried values and different trip counts; a spin on a lock no program releases is an
`InterpretError` at the loop, not a hang."""

from __future__ import annotations

import pytest
import torch

from tawac.compiler import parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import InterpretError, interpret

#: Stores index `%v` of program `%p` as f32 at out[%p, column] (the grid follows it).
_STORE = """
  %{v}_i = arith.index_cast %{v} : index to i32
  %{v}_f = arith.sitofp %{v}_i : i32 to f32
  %{v}_t = tile.splat %{v}_f : f32 -> tensor<1xf32>
  tile.store %{v}_t, %out[%p, %c{col}] : tensor<1xf32> -> !tile.tensor<?x?xf32>"""


def _kernel(text: str) -> tile.KernelOp:
    module = parse_text(text, "locks.mlir")
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


EXCHANGES = (
    """tile.kernel @exchanges(%t: !tile.tensor<?xi32>, %out: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %c100 = arith.constant 100 : index
  %p = tile.program_id x
  %old = tile.atomic_cas relaxed %t[%p], %c5, %c7 : !tile.tensor<?xi32>
  %was = tile.atomic_xchg acq_rel %t[%p], %c9 : !tile.tensor<?xi32>
  %far = arith.addi %p, %c100 : index
  %none = tile.atomic_xchg relaxed %t[%far], %c9 : !tile.tensor<?xi32>"""
    + _STORE.format(v="old", col=0)
    + _STORE.format(v="was", col=1)
    + _STORE.format(v="none", col=2)
    + "\n  tile.return\n}\n"
)


def test_compare_and_swap_and_exchange_return_the_old_value():
    """Where the element is 5 the swap writes 7 and the exchange then reads 7; elsewhere
    the swap reads without writing; every element ends 9; outside the tensor: -1."""
    t = torch.tensor([5, 3, 5, -4], dtype=torch.int32)
    out = torch.full((4, 3), float("nan"))
    interpret(_kernel(EXCHANGES), [t, out], (4, 1, 1))
    assert out[:, 0].tolist() == [5, 3, 5, -4]
    assert out[:, 1].tolist() == [7, 3, 7, -4]
    assert out[:, 2].tolist() == [-1] * 4
    assert t.tolist() == [9, 9, 9, 9]


COUNT = (
    """tile.kernel @count(%l: !tile.tensor<?xi32>, %out: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tile.program_id x
  scf.while () : () -> () {
    %held = tile.atomic_cas acquire %l[%c0], %c0, %c1 : !tile.tensor<?xi32>
    %busy = arith.cmpi eq, %held, %c1 : index
    scf.condition(%busy)
  } do {
    scf.yield
  }
  %n = tile.load_index %l[%c1] : !tile.tensor<?xi32>
  %n1 = arith.addi %n, %c1 : index
  %prev = tile.atomic_xchg relaxed %l[%c1], %n1 : !tile.tensor<?xi32>
  %free = tile.atomic_xchg release %l[%c0], %c0 : !tile.tensor<?xi32>"""
    + _STORE.format(v="n", col=0)
    + "\n  tile.return\n}\n"
)


@pytest.mark.parametrize("grid", [(1, 1, 1), (7, 1, 1)])
def test_a_count_under_a_lock_counts_every_program(grid):
    """Program p finds the lock free, reads the count p (the programs run one after
    another, x fastest) and leaves p + 1; the lock ends free."""
    lock = torch.tensor([0, 0], dtype=torch.int32)
    out = torch.full((grid[0], 1), float("nan"))
    stats = interpret(_kernel(COUNT), [lock, out], grid)
    assert stats["programs"] == grid[0]
    assert out[:, 0].tolist() == list(range(grid[0]))
    assert lock.tolist() == [0, grid[0]]


def test_a_lock_no_program_releases_is_an_error_at_the_spin():
    lock = torch.tensor([1, 0], dtype=torch.int32)
    out = torch.full((3, 1), float("nan"))
    with pytest.raises(InterpretError, match=r"scf\.while at locks\.mlir:5:3: an iteration"):
        interpret(_kernel(COUNT), [lock, out], (3, 1, 1))


STEPS = (
    """tile.kernel @steps(%out: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %p = tile.program_id x
  %r, %s = scf.while (%i = %c0, %j = %c0) : (index, index) -> (index, index) {
    %go = arith.cmpi slt, %i, %p : index
    scf.condition(%go) %i, %j : index, index
  } do {
  ^bb0(%a: index, %b: index):
    %a1 = arith.addi %a, %c1 : index
    %b1 = arith.addi %b, %c2 : index
    scf.yield %a1, %b1 : index, index
  }"""
    + _STORE.format(v="r", col=0)
    + _STORE.format(v="s", col=1)
    + "\n  tile.return\n}\n"
)


def test_a_while_loop_runs_in_lockstep_with_its_carried_values():
    """Program p iterates p times (none for program 0): each leaves with the values its
    last condition forwarded, whatever the others still do."""
    out = torch.full((5, 2), float("nan"))
    interpret(_kernel(STEPS), [out], (5, 1, 1))
    assert out[:, 0].tolist() == [0, 1, 2, 3, 4]
    assert out[:, 1].tolist() == [0, 2, 4, 6, 8]
