"""`tile.load ... padding V`: elements outside the tensor read as V (a ragged row's tail
that must not change a maximum reads -inf), and `tile.reduce min`. The interpreter runs
both; the passes after warp-specialize cannot lower a padding other than zero yet, so
warp-specialize refuses it with a located error (never a kernel that reads zeros
instead)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tawac.check import run
from tawac.compiler import compile_source, parse_text, run_pipeline
from tawac.dialects import tile
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
TENSOR = '!tile.tensor<?x?xf32, ["M", "N"]>'
VECTOR = '!tile.tensor<?xf32, ["M"]>'


def _program(padding: str, kind: str) -> str:
    """One 4x8 tile per program at rows 4 * pid, its row `kind` stored."""
    pad = f" padding {padding}" if padding else ""
    return f"""tile.kernel @k(%x: {TENSOR}, %y: {VECTOR}) {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c4 : index
  %t = tile.load %x[%m0, %c0]{pad} : {TENSOR} -> tensor<4x8xf32>
  %r = tile.reduce {kind} %t, 1 : tensor<4x8xf32> -> tensor<4xf32>
  tile.store %r, %y[%m0] : tensor<4xf32> -> {VECTOR}
  tile.return
}}
"""


PADDINGS = ["-inf", "inf", "nan", "0.5", "-1.0e+30", "1.5e-07", "0.0", "-0.0"]


@pytest.mark.parametrize("padding", PADDINGS)
def test_padding_prints_and_parses_back(padding):
    module = parse_text(_program(padding, "max"), "k.mlir")
    load = next(o for o in module.walk() if isinstance(o, tile.LoadOp))
    want = float(padding)
    got = load.padding_value
    assert (math.isnan(got) and math.isnan(want)) or (got == want and str(got) == str(want))
    again = parse_text(str(module), "again.mlir")
    assert str(again) == str(module)
    assert f"padding {padding}" in str(module)


def test_a_bad_padding_is_a_located_error():
    with pytest.raises(CompileError, match=r"^k\.mlir:6:\d+: error: expected a number, inf"):
        parse_text(_program("huge", "max"), "k.mlir")


@pytest.mark.parametrize(
    ("padding", "kind", "tail"),
    [
        ("", "max", 0.0),  # zeros: the row max of negative numbers becomes 0
        ("-inf", "max", None),  # the true maximum
        ("inf", "min", None),  # the true minimum
        ("", "min", None),  # positive numbers' min with a zero tail: 0
        ("2.5", "sum", 2.5),  # each of the 5 elements outside adds 2.5
    ],
)
def test_the_interpreter_reads_the_outside_as_the_padding(padding, kind, tail):
    module = parse_text(_program(padding, kind), "k.mlir")
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    sign = -1.0 if kind == "max" else 1.0
    x = sign * (torch.rand(6, 3) + 1.0)  # 3 columns of a tile of 8: 5 outside
    got = run(kernel, {"x": x, "y": torch.zeros(6)})["y"]
    if kind == "max":
        want = x.amax(1) if tail is None else torch.zeros(6)
    elif kind == "min":
        want = x.amin(1) if padding else torch.zeros(6)
    else:
        want = x.sum(1) + 5 * tail
    assert torch.allclose(got, want), (got, want)


def test_warp_specialize_refuses_a_padding_pad_loads_cannot_rewrite():
    """A padded 1-d load (pad-loads rewrites 2-d tiles of 2-d tensors) reaches
    warp-specialize with its padding: a located error, never a kernel reading zeros."""
    text = f"""tile.kernel @k(%x: {TENSOR}, %v: {VECTOR}, %y: {TENSOR}) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : {TENSOR} -> tensor<64x128xf32>
  %w = tile.load %v[%c0] padding -inf : {VECTOR} -> tensor<128xf32>
  %b = tile.broadcast %w, 1 : tensor<128xf32> -> tensor<64x128xf32>
  %s = arith.addf %t, %b : tensor<64x128xf32>
  tile.store %s, %y[%c0, %c0] : tensor<64x128xf32> -> {TENSOR}
  tile.return
}}
"""
    what = "a tile.load padded with a value other than 0 is not supported yet"
    with pytest.raises(CompileError, match=rf"^k\.mlir:4:\d+: error: warp-specialize: {what}"):
        compile_source(text, "k.mlir")


def test_group_heads_keeps_the_padding():
    """group-heads rebuilds the query load as a stacked one: its padding goes with it."""
    text = (REPO / "examples" / "attention_decode.mlir").read_text()
    load = "%qt = tile.load %q[%b, %h, %m0, %c0] :"
    assert load in text
    text = text.replace(load, load.replace(" :", " padding 1.0 :"))
    module = parse_text(text, "decode.mlir", params={"GROUP": 8})
    run_pipeline(module, "canonicalize,group-heads")
    stacked = [o for o in module.walk() if isinstance(o, tile.LoadOp) and o.stack is not None]
    assert len(stacked) == 1 and stacked[0].padding_value == 1.0
