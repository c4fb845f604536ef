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
