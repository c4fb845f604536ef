"""A float tensor constant written in hex is its bit pattern, as in MLIR: xDSL prints
-inf as `dense<0xff800000> : tensor<128xf32>` but its parser read the digits as the
integer 4286578688 (found comparing `tawac opt -p convert-ttir` output, re-parsed,
with the tutorial attention: its `m_i = -inf` start became 4.29e9, a wrong result)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from xdsl.dialects import arith

from tawac.compiler import parse_file, parse_text
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parents[1]


def _constants(text: str) -> list[list[float]]:
    module = parse_text(text, "k.mlir")
    return [list(o.value.get_values()) for o in module.walk() if isinstance(o, arith.ConstantOp)]


@pytest.mark.parametrize(
    ("literal", "ty", "want"),
    [
        ("0xff800000", "f32", -math.inf),
        ("0x7f800000", "f32", math.inf),
        ("0x3f800000", "f32", 1.0),
        ("0xFC00", "f16", -math.inf),
        ("0x3C00", "f16", 1.0),
        ("0xff80", "bf16", -math.inf),
        ("-1.5", "f32", -1.5),
    ],
)
def test_a_hex_float_splat_is_its_bits(literal, ty, want):
    text = f"""
tile.kernel @k(%x: !tile.tensor<?x?xbf16, ["M", "N"]>) {{
  %c = arith.constant dense<{literal}> : tensor<4x{ty}>
  tile.return
}}
"""
    assert _constants(text) == [[want] * 4]


def test_an_integer_tensor_in_hex_stays_an_integer():
    text = """
tile.kernel @k(%x: !tile.tensor<?x?xbf16, ["M", "N"]>) {
  %c = arith.constant dense<0x10> : tensor<4xi32>
  tile.return
}
"""
    assert _constants(text) == [[16] * 4]


def test_the_converted_tutorial_attention_round_trips():
    """Printed and parsed again, the converted kernel prints the same."""
    first = str(parse_file(REPO / "examples/triton/attention.ttir"))
    assert "dense<0xff800000>" in first
    assert str(parse_text(first, "again.mlir")) == first


@pytest.mark.parametrize(
    ("ty", "message"),
    [
        ("tensor<?x4xf32>", "a dense literal's type must have a static shape, not"),
        (
            '!tile.tensor<?x4xf32, ["M", "N"]>',
            "a dense literal's type must be a tensor of integers, indices or floats, not",
        ),
    ],
)
def test_a_dense_literal_of_a_bad_type_is_an_error_at_the_type(ty, message):
    """The error points at the literal's type (line 2, column 36), not at the next op."""
    text = (
        f"tile.kernel @k(%a: f32) {{\n  %c = arith.constant dense<1.0> : {ty}\n  tile.return\n}}\n"
    )
    with pytest.raises(CompileError) as e:
        parse_text(text, "k.mlir")
    assert str(e.value).startswith(f"k.mlir:2:36: error: {message}")
