"""`tile.reduce` of a 1-d tile to a scalar (`tile.reduce max %v, 0 : tensor<1024xf32> ->
f32`): it parses and prints back as written, the verifier refuses the forms that are not
one, and the interpreter agrees with torch (a tile's padding included)."""

from __future__ import annotations

import pytest
import torch

from tawac.compiler import parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch
from tawac.support.diagnostics import CompileError

KERNEL = """tile.kernel @k(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["N"]>) {
  %c = arith.constant 1024 : index
  %pid = tile.program_id x
  %o = arith.muli %pid, %c : index
  %t = tile.load %x[%o] padding PAD : !tile.tensor<?xf32, ["N"]> -> tensor<1024xf32>
  %m = tile.reduce KIND %t, 0 : tensor<1024xf32> -> f32
  %s = tile.splat %m : f32 -> tensor<1024xf32>
  tile.store %s, %y[%o] : tensor<1024xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
"""
PADDING = {"max": "-inf", "min": "inf", "sum": "0.0"}


def _kernel(kind: str) -> str:
    return KERNEL.replace("KIND", kind).replace("PAD", PADDING[kind])


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_it_prints_as_written_and_parses_back(kind):
    module = parse_text(_kernel(kind), "k.mlir")
    printed = str(module)
    assert f"tile.reduce {kind} %t, 0 : tensor<1024xf32> -> f32" in printed
    assert parse_text(printed, "printed.mlir").is_structurally_equivalent(module)


def test_the_2d_form_prints_as_before():
    text = """tile.kernel @k(%x: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<64x32xf32>
  %m = tile.reduce sum %t, 1 : tensor<64x32xf32> -> tensor<64xf32>
  tile.return
}
"""
    assert "tile.reduce sum %t, 1 : tensor<64x32xf32> -> tensor<64xf32>" in str(
        parse_text(text, "k.mlir")
    )


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (
            "%t, 1 : tensor<1024xf32> -> f32",
            "a 1-d tile reduces along dimension 0, not 1",
        ),
        ("%t, 0 : tensor<1024xf32> -> bf16", "gives f32, not bf16"),
        ("%u, 0 : tensor<32x32xf32> -> f32", "only a 1-d tile reduces to a scalar"),
        ("%t, 0 : tensor<1024xf32> -> tensor<1xf32>", "expected 2-d to 1-d"),
    ],
)
def test_the_verifier_refuses_what_is_not_a_reduction_to_a_scalar(form, message):
    text = f"""tile.kernel @k(%x: !tile.tensor<?xf32>, %z: !tile.tensor<?x?xf32>) {{
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : !tile.tensor<?xf32> -> tensor<1024xf32>
  %u = tile.load %z[%c0, %c0] : !tile.tensor<?x?xf32> -> tensor<32x32xf32>
  %m = tile.reduce max {form}
  tile.return
}}
"""
    with pytest.raises(CompileError, match=message) as e:
        parse_text(text, "bad.mlir")
    assert str(e.value).startswith("bad.mlir:5:"), str(e.value)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
@pytest.mark.parametrize("n", [1, 1000, 1024, 2500])
def test_the_interpreter_agrees_with_torch(kind, n):
    module = parse_text(_kernel(kind), "k.mlir")
    kernel = next(o for o in module.walk() if isinstance(o, tile.KernelOp))
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)) - 3  # all negative-ish
    y = torch.full_like(x, float("nan"))
    interpret_launch(kernel, [x, y])
    for start in range(0, n, 1024):
        chunk = x[start : start + 1024]
        want = {"max": chunk.max(), "min": chunk.min(), "sum": chunk.sum()}[kind]
        torch.testing.assert_close(y[start : start + 1024], want.expand(len(chunk)))
