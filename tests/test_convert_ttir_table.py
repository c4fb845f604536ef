"""`convert-ttir`'s table of converters (`tawac.passes.convert_ttir.dispatch`): an op is
taken by the first row of its class whose condition holds, else by the rows for
`Operation` (float math copied, index work dropped), else refused at its Python line; a
new construct is a new row."""

from __future__ import annotations

import pytest
from test_convert_ttir import _HEAD as _PROGRAM_HEAD
from test_convert_ttir import _TAIL
from xdsl.dialects import arith
from xdsl.ir import Operation

from tawac.compiler import parse_text
from tawac.passes.convert_ttir.dispatch import CONVERTERS
from tawac.support.diagnostics import CompileError

#: test_convert_ttir's kernel head (a program id, a 64-wide range) with a masked f16 row.
_HEAD = _PROGRAM_HEAD + (
    "    %o = arith.muli %pid, %c64 : i32 loc(#a)\n"
    "    %os = tt.splat %o : i32 -> tensor<64xi32> loc(#a)\n"
    "    %i = arith.addi %os, %r : tensor<64xi32> loc(#a)\n"
    "    %q = tt.addptr %ps, %i : tensor<64x!tt.ptr<f16>>, tensor<64xi32> loc(#a)\n"
    "    %ns = tt.splat %n : i32 -> tensor<64xi32> loc(#a)\n"
    "    %m = arith.cmpi slt, %i, %ns : tensor<64xi32> loc(#a)\n"
    "    %z = arith.constant dense<0.0> : tensor<64xf16> loc(#a)\n"
)
_STORE = "    tt.store %q, %z, %m : tensor<64x!tt.ptr<f16>> loc(#a)\n"

#: An op of integer tiles no row takes (`arith.xori` is not index work the plan rebuilds).
_XORI = (
    "    %x = tt.splat %n : i32 -> tensor<64xi32> loc(#a)\n"
    "    %xx = arith.xori %x, %x : tensor<64xi32> loc(#b)\n"
)


def _ttir(body: str) -> str:
    return _HEAD + body + _TAIL


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # tt.cmpf's row takes a float mask only selects read; this one is read by an xori
        ("    %f = arith.cmpf olt, %z, %z : tensor<64xf16> loc(#b)\n"
         "    %g = arith.xori %f, %f : tensor<64xi1> loc(#a)\n" + _STORE,
         "arith.cmpf is not supported"),
        # tt.select's row takes a tile mask; a scalar condition falls to the copy of float
        # math, which meets the scalar comparison (index work, not converted)
        ("    %w = arith.constant dense<1.0> : tensor<64xf16> loc(#a)\n"
         "    %c = arith.cmpi slt, %pid, %c64 : i32 loc(#a)\n"
         "    %s = arith.select %c, %z, %w : tensor<64xf16> loc(#b)\n"
         "    tt.store %q, %s, %m : tensor<64x!tt.ptr<f16>> loc(#a)\n",
         "arith.select reads a value of arith.cmpi that tawac does not convert"),
        (_XORI + _STORE, "arith.xori is not supported"),
    ],
    ids=["cmpf-read-by-xori", "select-by-a-scalar", "xori"],
)  # fmt: skip
def test_an_op_its_class_rows_refuse_goes_to_the_generic_rows(body, message):
    with pytest.raises(CompileError) as err:
        parse_text(_ttir(body), "k.ttir")
    assert err.value.message == f"convert-ttir: {message}"
    assert err.value.location == "k.py:9:5"


def test_a_new_construct_is_a_new_row(monkeypatch):
    seen: list[Operation] = []
    monkeypatch.setitem(CONVERTERS, arith.XOrIOp, [(None, lambda em, op: seen.append(op))])
    module = parse_text(_ttir(_XORI + _STORE), "k.ttir")
    assert [op.name for op in seen] == ["arith.xori"]
    assert "tile.store" in str(module) and "xori" not in str(module)


def test_no_class_in_the_table_is_a_subclass_of_another():
    """An op's rows are those of its own class: the first row of the old if/elif chain
    that took it, whatever the order the modules were imported in."""
    classes = [c for c in CONVERTERS if c is not Operation]
    for a in classes:
        assert not [b for b in classes if b is not a and issubclass(a, b)], a
    rows = {c.__name__: [f.__name__ for _, f in r] for c, r in CONVERTERS.items()}
    assert rows["ForOp"] == ["_tiles", "_loop"]  # the persistent loop's row first
    assert rows["Operation"] == ["_expanded_math", "_copy", "_rebuilt"]
