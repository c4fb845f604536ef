"""The grid check of `convert-ttir` (`tawac.passes.convert_ttir.grid`): the program order
compiled to Python (`_Order`) gives the verdicts, the errors and the ops they name of
the order evaluated point by point (`_Check._walk`, which it falls back to), including
which of two errors comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.compiler import parse_text
from tawac.passes.convert_ttir import grid
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent

_HEAD = (
    "module {\n"
    "  tt.func public @k(%p: !tt.ptr<f16> loc(#a), %n: i32 loc(#a)) {\n"
    "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#a)\n"
    "    %ps = tt.splat %p : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>> loc(#a)\n"
    "    %pid = tt.get_program_id x : i32 loc(#a)\n"
    "    %c1 = arith.constant 1 : i32 loc(#a)\n"
    "    %c63 = arith.constant 63 : i32 loc(#a)\n"
    "    %c64 = arith.constant 64 : i32 loc(#a)\n"
    "    %n63 = arith.addi %n, %c63 : i32 loc(#a)\n"
    "    %nb = arith.divsi %n63, %c64 : i32 loc(#a)\n"
    "    %zero = arith.subi %n, %n : i32 loc(#a)\n"
)
# the block `q % nb` of `q`, nb = cdiv(n, 64), stored at rows masked by n
_TAIL = (
    "    %q = arith.remsi %s, %nb : i32 loc(#a)\n"
    "    %o = arith.muli %q, %c64 : i32 loc(#a)\n"
    "    %os = tt.splat %o : i32 -> tensor<64xi32> loc(#a)\n"
    "    %i = arith.addi %os, %r : tensor<64xi32> loc(#a)\n"
    "    %q2 = tt.addptr %ps, %i : tensor<64x!tt.ptr<f16>>, tensor<64xi32> loc(#a)\n"
    "    %ns = tt.splat %n : i32 -> tensor<64xi32> loc(#a)\n"
    "    %m = arith.cmpi slt, %i, %ns : tensor<64xi32> loc(#a)\n"
    "    %z = arith.constant dense<0.0> : tensor<64xf16> loc(#a)\n"
    "    tt.store %q2, %z, %m : tensor<64x!tt.ptr<f16>> loc(#b)\n"
    "    tt.return loc(#a)\n  } loc(#a)\n} loc(#a)\n"
    '#a = loc("k.py":1:0)\n#b = loc("k.py":2:0)\n#c = loc("k.py":3:0)\n#d = loc("k.py":4:0)\n'
)

#: program orders `s` (before `% nb`) and the outcome: None (a kernel) or (message, line)
ORDERS = {
    "the program id": ("    %s = arith.addi %pid, %zero : i32 loc(#a)\n", None),
    "the larger of the program id and 0": (
        "    %s = arith.maxsi %pid, %zero : i32 loc(#a)\n",
        None,
    ),
    "the smaller of the program id and 1": (
        "    %s = arith.minsi %pid, %c1 : i32 loc(#a)\n",
        ("not a permutation of the tile grid at n=129", "2"),
    ),
    # pid / (pid - 1): zero at the second program of 2 blocks (n=127)
    "a division by zero at a point": (
        "    %d = arith.subi %pid, %c1 : i32 loc(#a)\n"
        "    %x = arith.divsi %pid, %d : i32 loc(#c)\n"
        "    %s = arith.addi %pid, %x : i32 loc(#a)\n",
        ("divides by zero", "3"),
    ),
    # 64 % (pid - 1) is at the first point already
    "a remainder by zero": (
        "    %d = arith.subi %pid, %c1 : i32 loc(#a)\n"
        "    %x = arith.remsi %c64, %d : i32 loc(#c)\n"
        "    %s = arith.addi %pid, %x : i32 loc(#a)\n",
        ("takes a remainder by zero", "3"),
    ),
    # 64 / (n - n): zero at every size
    "a division by zero at every point": (
        "    %y = arith.divsi %c64, %zero : i32 loc(#d)\n"
        "    %s = arith.addi %pid, %y : i32 loc(#a)\n",
        ("divides by zero", "4"),
    ),
    # 64 / pid is evaluated first and is zero at the first point: its error, not that
    # of 64 / (n - n) after it
    "the first of two divisions by zero": (
        "    %x = arith.divsi %c64, %pid : i32 loc(#c)\n"
        "    %y = arith.divsi %c64, %zero : i32 loc(#d)\n"
        "    %x2 = arith.addi %x, %y : i32 loc(#a)\n"
        "    %s = arith.addi %pid, %x2 : i32 loc(#a)\n",
        ("divides by zero", "3"),
    ),
    "an op no program order computes": (
        "    %u = arith.divui %pid, %c1 : i32 loc(#d)\n"
        "    %s = arith.addi %pid, %u : i32 loc(#a)\n",
        ("a program order computed by arith.divui", "4"),
    ),
    # the division by zero is met before the op no order computes
    "a division by zero before an op no order computes": (
        "    %x = arith.divsi %c64, %pid : i32 loc(#c)\n"
        "    %u = arith.divui %pid, %c1 : i32 loc(#d)\n"
        "    %s = arith.addi %x, %u : i32 loc(#a)\n",
        ("divides by zero", "3"),
    ),
    "not a permutation": (
        "    %c2 = arith.constant 2 : i32 loc(#a)\n    %s = arith.divsi %pid, %c2 : i32 loc(#a)\n",
        ("not a permutation of the tile grid at n=127", "2"),
    ),
}


def _outcome(text: str, name: str = "k.ttir") -> str:
    try:
        return "kernel\n" + str(parse_text(text, name))
    except CompileError as e:
        return f"error {e.message} at {e.location}"


def _interpreted(text: str, monkeypatch, name: str = "k.ttir") -> str:
    with monkeypatch.context() as m:
        m.setattr(grid._Order, "build", staticmethod(lambda *a: None))
        return _outcome(text, name)


@pytest.mark.parametrize("case", list(ORDERS))
def test_the_compiled_order_gives_the_evaluated_orders_outcome(case, monkeypatch):
    body, expected = ORDERS[case]
    text = _HEAD + body + _TAIL
    got = _outcome(text)
    assert got == _interpreted(text, monkeypatch)
    if expected is None:
        assert got.startswith("kernel"), got
    else:
        message, line = expected
        assert got.startswith("error convert-ttir: ") and message in got, got
        assert got.endswith(f"at k.py:{line}:0"), got


def test_an_error_computed_once_per_size_falls_back_to_the_points(monkeypatch):
    """64 / (n - n) is computed once per combination of sizes: its error makes the walk
    evaluate that combination point by point, which meets 64 / pid first."""
    body, _ = ORDERS["the first of two divisions by zero"]
    walked = []
    walk = grid._Check._walk
    monkeypatch.setattr(grid._Check, "_walk", lambda *a: walked.append(1) or walk(*a))
    got = _outcome(_HEAD + body + _TAIL)
    assert "divides by zero at k.py:3:0" in got and walked == [1]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, None),
        # the persistent loop's bound the sum of the tile counts, not their product
        ("arith.muli %num_pid_m_13, %num_pid_n_15", "arith.addi %num_pid_m_13, %num_pid_n_15"),
    ],
)
def test_a_persistent_loops_tile_count_is_checked_as_evaluated(old, new, monkeypatch):
    text = (REPO / "examples/triton/matmul_persistent.ttir").read_text()
    if old is not None:
        assert old in text
        text = text.replace(old, new, 1)
    got = _outcome(text)
    assert got == _interpreted(text, monkeypatch)
    assert got.startswith("kernel") == (old is None), got
