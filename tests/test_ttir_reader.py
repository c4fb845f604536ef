"""The TTIR reader's shortcuts (`tawac.ir.ttir`) read what xDSL's parser reads: location
aliases read by `_read_alias`, each type text read once, a float splat packed once and
the lexer's dispatch of frequent tokens, checked against the reader without them
(`_Plain`) on the shipped TTIR files and on edits of them at the shortcuts' edges; a
text read again is a copy of the module read first (`_copy`), uses in the same order;
and `convert-ttir`'s splat test (`_splat`) against xDSL's `is_splat`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    TensorType,
)

from tawac.ir import ttir
from tawac.ir.parser import BoundedParser
from tawac.passes.convert_ttir.common import _splat
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted(
    p for d in ("examples/triton", "tests/data/triton") for p in (REPO / d).rglob("*.ttir")
)
MATMUL = (REPO / "examples/triton/matmul.ttir").read_text()


class _Plain(ttir._TtirParser):
    """`_TtirParser` without its shortcuts: tawac's lexer as it is, every type read,
    every splat packed element by element (xDSL's)."""

    def __init__(self, ctx, text, name):
        BoundedParser.__init__(self, ctx, text, name)

    parse_optional_type = BoundedParser.parse_optional_type
    parse_dense_int_or_fp_elements_attr = BoundedParser.parse_dense_int_or_fp_elements_attr


def _read(text: str, name: str = "k.ttir") -> str:
    """The module `parse_ttir` reads (`_described`), or its error."""
    try:
        return _described(ttir.parse_ttir(text, name))
    except CompileError as e:
        return f"error {e.message} at {e.location}"


def _described(module) -> str:
    """`module` printed, every op with its location, types and attributes (a splat's
    bytes included), every value's name and uses."""
    out = [str(module), str(ttir._uses(module))]
    for op in module.walk():
        out.append(f"{op.name} {op.location} {[str(r.type) for r in op.results]}")
        for attrs in (op.properties, op.attributes):
            for key, value in sorted(attrs.items()):
                out.append(f"  {key} = {value}")
                if isinstance(value, DenseIntOrFPElementsAttr):
                    out.append(f"  {value.data.data.hex()}")
        for region in op.regions:
            for block in region.blocks:
                out.extend(f"  arg {a.name_hint} {a.type} {a.location}" for a in block.args)
        out.extend(f"  result {r.name_hint}" for r in op.results)
    return "\n".join(out)


@pytest.fixture(autouse=True)
def _unread(monkeypatch):
    """Each test reads its texts as new (`parse_ttir`'s memory empty)."""
    monkeypatch.setattr(ttir, "_SEEN", {})
    monkeypatch.setattr(ttir, "_KEPT", {})


def _plain(text: str, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(ttir, "_SEEN", {})
        m.setattr(ttir, "_KEPT", {})
        m.setattr(ttir, "_TtirParser", _Plain)
        m.setattr(ttir, "_hoisted", lambda text: (ttir.hoist_aliases(text), {}))
        return _read(text)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_file_reads_as_without_the_shortcuts(path, monkeypatch):
    text = path.read_text()
    assert _read(text) == _plain(text, monkeypatch)


def test_every_alias_of_the_shipped_files_is_read_by_the_shortcut():
    for path in SHIPPED:
        text = path.read_text()
        _, aliases = ttir._hoisted(text)
        assert len(aliases) == len(ttir._ALIAS.findall(text)), path


def _both_ways(line: str, aliases: dict):
    """`_read_alias` and `_read_tokens` of `line`: (name, location) or "slow"."""
    out = []
    for read in (ttir._read_alias, ttir._read_tokens):
        try:
            name, loc = read(line, aliases)
            out.append((name, loc, type(loc)))
        except ttir._Slow:
            out.append("slow")
    return out


_LINES = [
    '#a = loc("f.py":1:2)',
    '#a=loc("f.py":1:2)',
    '#a = loc ( "f.py" : 1 : 2 )',
    '#a = loc("f.py":1:2x)',
    '#a = loc("f.py":01:2)',
    '#a = loc("f.py":1.0:2)',
    '#a = loc("n"(#loc))',
    '#a = loc("n"(#nope))',
    '#a = loc("n"(#loc.b))',
    "#a = loc(callsite(#loc at #loc))",
    "#a = loc(callsite(#loc at#loc))",
    "#a = loc(callsite(#locat #loc))",
    "#a = loc(callsite(#loc atx #loc))",
    '#loc = loc("f.py":1:2)',
    '#1 = loc("f.py":1:2)',
    '#1a = loc("f.py":1:2)',
    '#a- = loc("f.py":1:2)',
    '#a = loc("":0:0)',
    '#a = loc("x\\y":1:2)',
]


@pytest.mark.parametrize("line", _LINES)
def test_an_alias_line_reads_the_same_by_its_form_and_token_by_token(line):
    aliases = {"#loc": ttir.UnknownLoc()}
    fast, tokens = _both_ways(line, aliases)
    assert fast == tokens


def test_every_shipped_alias_reads_the_same_by_its_form_and_token_by_token():
    for path in SHIPPED:
        aliases: dict = {}
        for line in (a.strip() for a in ttir._ALIAS.findall(path.read_text())):
            fast, tokens = _both_ways(line, aliases)
            assert fast == tokens != "slow", (path, line)
            aliases[fast[0]] = fast[1]


_ALIAS_EDITS = [
    '#loc65 = loc("a\\"b":1:2)',  # an escape
    '#loc65 = loc("é.py":1:2)',
    '#loc65 = loc("f.py":007:1)',
    '#loc65 = loc("f.py":12345678901234567890:1)',
    '#loc65 = loc("f.py":1.5:2)',
    '#loc65 = loc( "f.py" : 1 : 2 )',
    "#loc65 = loc(fused[#loc, #loc])",
    "#loc65 = loc(callsite(#loc at #loc66))",  # an alias not yet defined
    '#loc65 = loc(callsite("q"(#loc) at "r":1:2))',
    '#loc65 = loc("x")',
    '#loc65 = loc("x"())',
    "#loc65 = loc(#loc.x)",
    "#loc65 = loc(#loc<1>)",
    "#loc65 = loc(unknown)",
    '#loc = loc("a_ptr"(#loc))',  # defined twice
    '#loc.a = loc("a_ptr"(#loc))',
    '#1abc = loc("a_ptr"(#loc))',
    '#-} = loc("a_ptr"(#loc))',
]
_BODY_EDITS = [
    ("tensor<128x64xf16>", "tensor<128x64xf16 >"),
    ("tensor<128x64xf16>", "tensor<128x0xf16>"),  # refused, where each one is
    ("tensor<128x64xf16>", "tensor<128x64xf16, #loc>"),
    ("tensor<128x64xf16>", "tensor<?x64xf16>"),
    ("tensor<128x64xf16>", "tensor<128x64xf16>x"),
    ("tensor<128x64xf16>", "tensor<128x64xf16> // a comment\n"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<0.000000e+00> : tensor<64x256xbf16>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<0x7FC0> : tensor<64x256xbf16>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<-2.5> : tensor<64x256xf16>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<1.0e+128> : tensor<64x256xf32>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", 'dense<"0x0000"> : tensor<64x256xf16>'),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<[0.0, 1.0]> : tensor<64x256xf16>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<3> : tensor<64x256xi32>"),
    ("dense<0.000000e+00> : tensor<64x256xf16>", "dense<> : tensor<64x256xf16>"),
    ("%c64_i32 = ", "#-} %c64_i32 = "),
    ("%c64_i32 = ", "{-# %c64_i32 = "),
    ("%c64_i32 = ", '"open %c64_i32 = '),
    ("%c64_i32 = ", "é %c64_i32 = "),
    ("%c64_i32 = ", "% %c64_i32 = "),
    ("%c64_i32 = ", "-%c64_i32 = "),
]


@pytest.mark.parametrize("alias", _ALIAS_EDITS)
def test_an_alias_the_shortcut_leaves_reads_as_xdsl_reads_it(alias, monkeypatch):
    text = MATMUL.replace('#loc65 = loc("a_ptr"(#loc))', alias)
    assert text != MATMUL
    assert _read(text) == _plain(text, monkeypatch)


@pytest.mark.parametrize(("old", "new"), _BODY_EDITS)
def test_an_edited_body_reads_as_without_the_shortcuts(old, new, monkeypatch):
    for text in (MATMUL.replace(old, new, 1), MATMUL.replace(old, new)):
        assert text != MATMUL
        assert _read(text) == _plain(text, monkeypatch)


@pytest.mark.parametrize("path", SHIPPED[:8], ids=lambda p: p.name)
def test_a_text_read_again_is_a_copy_of_the_first_module(path):
    text = path.read_text()
    first = ttir.parse_ttir(text, "k.ttir")
    second = ttir.parse_ttir(text, "k.ttir")  # read again: kept
    assert (text, "k.ttir") in ttir._KEPT
    expected = _described(first)
    first.body.block.erase_op(first.body.block.first_op)  # what a pass may do to it
    for copy in (second, ttir.parse_ttir(text, "k.ttir"), ttir.parse_ttir(text, "k.ttir")):
        assert copy is not first and _described(copy) == expected


def test_a_copy_keeps_names_as_read():
    """`%x_1_2` is kept as `x_1` (xDSL drops one `_N`); its copy too (the `name_hint`
    setter would drop another)."""
    text = MATMUL.replace("%c64_i32", "%c_1_2")
    assert text != MATMUL
    reads = [_read(text) for _ in range(3)]
    assert reads[0] == reads[1] == reads[2] and "%c_1 = " in reads[0]


def test_a_text_that_uses_a_value_before_defining_it_is_read_each_time():
    """The parser orders the uses of a value used before its definition otherwise than
    `_copy` would: such a module is not kept. It is also not a program (MLIR's dominance
    rule, which the tile source obeys too): each read is the same located error, at the
    first use, naming the value."""
    lines = MATMUL.split("\n")
    i = next(i for i, line in enumerate(lines) if "%c64_i32 = arith.constant" in line)
    moved = lines.pop(i)
    end = next(i for i, line in enumerate(lines) if "tt.return" in line)
    text = "\n".join([*lines[:end], moved, *lines[end:]])
    reads = [_read(text) for _ in range(3)]
    assert reads[0] == reads[1] == reads[2], reads
    assert reads[0].startswith("error %c64_i32 is used before its definition"), reads[0]
    assert reads[0].endswith(" at examples/triton/matmul.py:44:33"), reads[0]
    assert not ttir._KEPT


@pytest.mark.parametrize("elem", [BFloat16Type(), Float16Type(), Float32Type()])
@pytest.mark.parametrize("values", [[0.0], [-0.0], [1.5], [float("nan")], [0.0, -0.0], [1.0, 2.0]])
def test_splat_is_xdsls_is_splat(elem, values):
    shape = [4, 8]
    data = values * (math.prod(shape) // len(values))
    attr = DenseIntOrFPElementsAttr.from_list(TensorType(elem, shape), data)
    splat, first = _splat(attr)
    assert splat == attr.is_splat()
    assert math.isnan(first) if math.isnan(values[0]) else first == attr.get_values()[0]
