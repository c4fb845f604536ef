"""The tile and aref ops' custom syntax comes from declarative assembly formats
(`assembly_format`, with the custom directives of `tawac.dialects.directives`); the few
ops that parse and print by hand are named here, so that one going back to hand-written
syntax (or a new op added that way) is seen. Each op, in each of its optional forms,
prints as written and parses back to the same op; the directives' diagnostics point where
the hand-written parsers pointed."""

from __future__ import annotations

import re

import pytest
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation

from tawac.compiler import parse_text
from tawac.dialects.aref import Aref
from tawac.dialects.tile import Tile
from tawac.support.diagnostics import CompileError

#: Ops whose syntax is beyond `assembly_format` (and why, next to their `parse`).
HAND_WRITTEN = {"tile.kernel"}  # a signature with named block arguments

OPS = {op.name: op for op in [*Tile.operations, *Aref.operations]}

KERNEL = """builtin.module {
  tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %w: !tile.tensor<?x?x?xf32>, %q: !tile.tensor<?x?x?x?xbf16>, %po: !tile.tensor<?x?x?x?x?xf32>, %pm: !tile.tensor<?x?x?x?xf32>, %pl: !tile.tensor<?x?x?x?xf32>, %t: !tile.tensor<?xi32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %m0 = tile.program_id x
    %n0 = tile.program_id y {tawac.note = 1 : i64}
    %b0 = tile.program_id z
    %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
    %N = tile.dim %b[0] : !tile.tensor<?x?xbf16> {tawac.note = "n"}
    %x = tile.load %a[%m0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y = tile.load %b[%n0, %c0] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16> {tawac.note}
    %g = tile.load %q[%b0, %n0, %m0, %c0] stack 8 : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
    %gp = tile.load %q[%b0, %n0, %m0, %c0] stack 8 padding -inf : !tile.tensor<?x?x?x?xbf16> -> tensor<64x128xbf16>
    %xp = tile.load %a[%m0, %c0] padding 1.0e+30 : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16> {tawac.note}
    %z = tile.splat %s : f32 -> tensor<128x128xf32>
    %d = tile.dot %x, %y, %z transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    %r = tile.reduce max %d, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %rm = tile.reduce min %d, 1 : tensor<128x128xf32> -> tensor<128xf32>
    %r2 = tile.reduce sum %d, 0 : tensor<128x128xf32> -> tensor<128xf32> {tawac.note}
    %v = tile.broadcast %r, 0 : tensor<128xf32> -> tensor<128x128xf32>
    %rows = tile.iota 0, %m0 : tensor<128x128xi32>
    %cols = tile.iota 1, %n0 : tensor<128x128xi32> {tawac.note}
    %keep = tile.cmpi sge, %rows, %cols : tensor<128x128xi32>
    %ne = tile.cmpi ne, %rows, %cols : tensor<128x128xi32> {tawac.note}
    %e = tile.select %keep, %d, %v : tensor<128x128xi1>, tensor<128x128xf32>
    %n, %z0, %base = tile.split_info
    %last = tile.arrive %t[%m0] count %n : !tile.tensor<?xi32>
    %sum = tile.split_sum %w[%c0, %m0, %n0] count %n max 4 : !tile.tensor<?x?x?xf32> -> tensor<64x128xf32>
    %o, %om, %ol = tile.split_softmax %po[%c0, %b0, %n0, %m0, %c0], %pm, %pl count %n max 16 exp2 stack 8 : !tile.tensor<?x?x?x?x?xf32>, !tile.tensor<?x?x?x?xf32>, !tile.tensor<?x?x?x?xf32> -> tensor<64x128xf32>, tensor<64xf32>
    %o2, %om2, %ol2 = tile.split_softmax %po[%c0, %b0, %n0, %m0, %c0], %pm, %pl count %n max 2 exp : !tile.tensor<?x?x?x?x?xf32>, !tile.tensor<?x?x?x?xf32>, !tile.tensor<?x?x?x?xf32> -> tensor<64x128xf32>, tensor<64xf32> {tawac.note}
    %id = tile.load_index %t[%m0] : !tile.tensor<?xi32>
    %id2 = tile.load_index %t[%n0] : !tile.tensor<?xi32> {tawac.note}
    %old = tile.atomic_cas acq_rel %t[%m0], %c0, %id : !tile.tensor<?xi32>
    %was = tile.atomic_xchg release %t[%n0], %c0 : !tile.tensor<?xi32> {tawac.note}
    %h = arith.truncf %e : tensor<128x128xf32> to tensor<128x128xbf16>
    tile.store %h, %b[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
    tile.store %h, %b[%m0, %n0] bounds [%K, %N] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16> {tawac.store = "b"}
    tile.store %h, %b[%m0, %n0] transposed : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
    tile.store %sum, %w[%c0, %m0, %n0] stack 2 : tensor<64x128xf32> -> !tile.tensor<?x?x?xf32>
    tile.atomic_add %sum, %w[%c0, %m0, %n0] : tensor<64x128xf32> -> !tile.tensor<?x?x?xf32>
    tile.atomic_add %r2, %w[%c0, %m0, %n0] : tensor<128xf32> -> !tile.tensor<?x?x?xf32> {tawac.note}
    %ring = aref.create "a_b" : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 3>
    %ring2 = aref.create {tawac.note} : !aref.aref<[tensor<128x64xbf16>], 2>
    %ring3 = aref.create "c" {tawac.note} : !aref.aref<[tensor<128x64xbf16>], 2>
    aref.partition producer warp_groups 1 regs 40 {
      %ord = aref.ordinal
      %ord2 = aref.ordinal {tawac.note}
      aref.put %ring[%c0], %x, %y : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 3>
      aref.put %ring2[%c0], %x : !aref.aref<[tensor<128x64xbf16>], 2> {tawac.note}
    }
    aref.partition consumer warp_groups 2 regs 0 attributes {tawac.note} {
      %p0, %p1 = aref.get %ring[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 3>
      %p2 = aref.get %ring2[%c0] : !aref.aref<[tensor<128x64xbf16>], 2> {tawac.note}
      aref.consumed %ring[%c0] : !aref.aref<[tensor<128x64xbf16>, tensor<128x64xbf16>], 3>
      aref.consumed %ring2[%c0] deferred : !aref.aref<[tensor<128x64xbf16>], 2>
      aref.consumed %ring3[%c0] deferred : !aref.aref<[tensor<128x64xbf16>], 2> {tawac.note}
    }
    tile.return
  }
}"""  # noqa: E501


def test_ops_are_declarative_except_those_named():
    hand = {name for name, op in OPS.items() if op.get_irdl_definition().assembly_format is None}
    assert hand == HAND_WRITTEN
    for name in HAND_WRITTEN:  # custom syntax all the same, not xDSL's generic form
        assert OPS[name].parse.__func__ is not IRDLOperation.parse.__func__, name


def test_every_op_prints_as_written():
    """The module above is written as tawac prints it: every op (each optional form
    too: stack, bounds, transposed, deferred, an identity or none, attributes) keeps its
    text, byte for byte."""
    module = parse_text(KERNEL, "kernel.mlir")
    assert str(module) == KERNEL
    seen = {op.name for op in module.walk()}
    assert set(OPS) <= seen, set(OPS) - seen


def test_every_op_parses_back_to_itself():
    module = parse_text(KERNEL, "kernel.mlir")
    again = parse_text(str(module), "printed.mlir")
    assert again.is_structurally_equivalent(module)
    # The generic form shows the properties (and derived result types) the custom
    # syntax set: a bare `1` is IntAttr 1, `max` the string, `i1` the cmpi's result.
    generic = again.body.block.first_op
    ops: dict[str, Operation] = {}
    for op in generic.walk():
        ops.setdefault(op.name, op)
    assert ops["tile.dim"].properties["dim"].data == 1
    assert ops["tile.program_id"].properties["axis"].data == 0
    assert ops["tile.reduce"].properties["kind"].data == "max"
    assert str(ops["tile.cmpi"].results[0].type) == "tensor<128x128xi1>"
    assert str(ops["tile.split_softmax"].results[2].type) == "tensor<64xf32>"


LOAD_TYPES = "!tile.tensor<?x?xbf16> -> tensor<64x64xbf16>"
AREF = "!aref.aref<[tensor<64x64xf32>], 2>"


@pytest.mark.parametrize(
    "line,row,col,message",
    [
        ("%p = tile.program_id w", 5, 24, "expected axis x, y or z"),
        ("%d = tile.dim %a[1 : !tile.tensor<?x?xbf16>", 5, 22, "Expected ']'"),
        ("%x = tile.load %a[%c0, %c0 : " + LOAD_TYPES, 5, 30, "']' expected"),
        ("%x = tile.load %a[%c0, %c0] stack -1 : " + LOAD_TYPES, 5, 37, "integer literal"),
        (
            "%r = tile.reduce prod %m, 1 : tensor<64x64xf32> -> tensor<64xf32>",
            5,
            20,
            r"expected a reduction \(max, min, sum\)",
        ),
        (
            "%k = tile.cmpi lt, %i, %i : tensor<64x64xi32>",
            5,
            18,
            r"expected a predicate \(eq, ne, slt, sle, sgt, sge\)",
        ),
        ("%k = tile.cmpi slt, %c0, %c0 : index", 5, 34, "tile.cmpi: expected a tensor type"),
        # A type that breaks an operand's constraint: at the op, not the next line.
        (
            "%x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16> -> index",
            5,
            8,
            "index should be of base attribute tensor",
        ),
        (
            "%r = aref.create : " + AREF + "\n  aref.put %r[%c0, %c0], %m : " + AREF,
            6,
            24,
            "expected one iteration index",
        ),
        (
            "%r = aref.create : " + AREF + "\n  aref.put %r[%c0] : " + AREF,
            6,
            12,
            r"aref.put: 0 values do not match !aref\.aref",
        ),
        (
            "aref.partition spectator warp_groups 1 regs 0 {\n  }",
            5,
            18,
            r"expected a role \(producer, consumer\)",
        ),
    ],
)
def test_directive_diagnostics(line, row, col, message):
    text = (
        "tile.kernel @k(%a: !tile.tensor<?x?xbf16>) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %m = arith.constant dense<0.0> : tensor<64x64xf32>\n"
        "  %i = arith.constant dense<0> : tensor<64x64xi32>\n"
        f"  {line}\n"
        "  tile.return\n"
        "}\n"
    )
    with pytest.raises(CompileError) as e:
        parse_text(text, "bad.mlir")
    assert str(e.value).startswith(f"bad.mlir:{row}:{col}: error: "), str(e.value)
    assert re.search(message, str(e.value)), str(e.value)
