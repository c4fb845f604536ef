"""`tawac.analysis.scalars.multiple_of` on loop induction variables: lb + i * step is a
non-negative multiple of m where lb and step are (what lets a store in a loop over column
blocks write 16-byte vectors, tests/filecheck/passes/convert-to-ptx-blocked-loop-store.mlir),
and nothing more is claimed."""

from __future__ import annotations

import pytest
from xdsl.dialects import scf

from tawac.analysis.scalars import multiple_of
from tawac.compiler import parse_text

SOURCE = """
tile.kernel @loops(%x: !tile.tensor<?xf32, ["N"]>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %c100 = arith.constant 100 : index
  %c256 = arith.constant 256 : index
  %N = tile.dim %x[0] : !tile.tensor<?xf32, ["N"]>
  scf.for %a = %c0 to %N step %c256 {
    scf.for %b = %a to %N step %c16 {
      scf.for %c = %b to %N step %c3 {
      }
    }
  }
  scf.for %d = %c0 to %N step %c100 {
  }
  scf.for %e = %c8 to %N step %c16 {
  }
  scf.for %f = %c3 to %N step %c16 {
  }
  tile.return
}
"""


def _ivs() -> dict[str, object]:
    module = parse_text(SOURCE, "loops.mlir")
    loops = [o for o in module.walk() if isinstance(o, scf.ForOp)]
    return {lp.body.block.args[0].name_hint: lp.body.block.args[0] for lp in loops}


@pytest.mark.parametrize(
    ("iv", "m", "expected"),
    [
        ("a", 8, True),  # 0 + i * 256
        ("a", 256, True),
        ("a", 512, False),
        ("b", 16, True),  # from a, step 16
        ("b", 32, False),
        ("c", 2, False),  # step 3
        ("d", 4, True),  # step 100
        ("d", 8, False),
        ("e", 8, True),  # 8 + i * 16
        ("e", 16, False),
        ("f", 1, True),
        ("f", 2, False),  # from 3
    ],
)
def test_an_induction_variable_is_a_multiple_where_its_start_and_step_are(iv, m, expected):
    assert multiple_of(_ivs()[iv], m) is expected
