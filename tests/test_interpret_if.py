"""`scf.if` in the interpreter: each instance takes its branch's values, whether all the
active instances take one branch (the other is not run) or some take each; an untaken
branch stores nothing; inside a loop, an instance whose loop has ended keeps its values."""

from __future__ import annotations

import pytest
import torch
from test_interpret import parse_kernel

from tawac.runtime.interpret import interpret

BRANCHES = """
tile.kernel @k(%o: !tile.tensor<?xf32>, %w: !tile.tensor<?xf32>, %lim: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %pid = tile.program_id x
  %o0 = arith.muli %pid, %c4 : index
  %low = arith.cmpi slt, %pid, %lim : index
  %v = scf.if %low -> (tensor<4xf32>) {
    %a = arith.constant dense<1.000000e+00> : tensor<4xf32>
    tile.store %a, %w[%o0] : tensor<4xf32> -> !tile.tensor<?xf32>
    scf.yield %a : tensor<4xf32>
  } else {
    %b = arith.constant dense<2.000000e+00> : tensor<4xf32>
    scf.yield %b : tensor<4xf32>
  }
  tile.store %v, %o[%o0] : tensor<4xf32> -> !tile.tensor<?xf32>
  tile.return
}
"""


@pytest.mark.parametrize("lim", [0, 3, 5])
def test_each_instance_takes_its_branchs_values(lim):
    o, w = torch.zeros(20), torch.zeros(20)
    interpret(parse_kernel(BRANCHES), [o, w, lim], (5, 1, 1))
    low = torch.arange(20) // 4 < lim
    assert torch.equal(o, torch.where(low, 1.0, 2.0))
    assert torch.equal(w, low.float())


IN_LOOP = """
tile.kernel @k(%o: !tile.tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %pid = tile.program_id x
  %o0 = arith.muli %pid, %c4 : index
  %n = arith.addi %pid, %c1 : index
  %one = arith.constant dense<1.000000e+00> : tensor<4xf32>
  %ten = arith.constant dense<1.000000e+01> : tensor<4xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<4xf32>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<4xf32>) {
    %even = arith.remsi %i, %c2 : index
    %e = arith.cmpi eq, %even, %c0 : index
    %add = scf.if %e -> (tensor<4xf32>) {
      scf.yield %one : tensor<4xf32>
    } else {
      scf.yield %ten : tensor<4xf32>
    }
    %next = arith.addf %acc, %add : tensor<4xf32>
    scf.yield %next : tensor<4xf32>
  }
  tile.store %s, %o[%o0] : tensor<4xf32> -> !tile.tensor<?xf32>
  tile.return
}
"""


def test_an_if_in_a_loop_of_different_trip_counts():
    """Program p runs p + 1 iterations, adding 1 at even and 10 at odd ones: every
    iteration's instances all take one branch, and the ended ones keep their sums."""
    o = torch.zeros(16)
    interpret(parse_kernel(IN_LOOP), [o], (4, 1, 1))
    sums = [sum(1.0 if i % 2 == 0 else 10.0 for i in range(p + 1)) for p in range(4)]
    assert torch.equal(o, torch.tensor(sums).repeat_interleave(4))
