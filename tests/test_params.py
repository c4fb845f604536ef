"""Kernel parameters (tawac.support.params): declaration, `$NAME` substitution, overrides from
`-D` and Python, diagnostics located in the user's text, the sidecar's record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inprocess import tawac

from tawac.driver import compile_file, compile_source, parse_text
from tawac.support.diagnostics import CompileError
from tawac.support.params import parse_defines, substitute

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

KERNEL = """\
// a comment with $NOT_A_PARAM and params = {X = 1}
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) \
attributes {params = {BM = 128, BK = 64}} {
  %c0 = arith.constant 0 : index
  %bm = arith.constant $BM : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %bm : index
  %x = tile.load %a[%m0, %c0] : !tile.tensor<?x?xbf16> -> tensor<$BMx$BKxbf16>
  tile.store %x, %c[%m0, %c0] : tensor<$BMx$BKxbf16> -> !tile.tensor<?x?xbf16>
  tile.return
}
"""


def test_defaults_substituted_and_recorded():
    sub = substitute(KERNEL, "k.mlir")
    assert sub.values == {"BM": 128, "BK": 64}
    assert "tensor<128x64xbf16>" in sub.text
    assert "$BM" not in sub.text.split("\n", 1)[1]  # the comment is left alone
    assert "$NOT_A_PARAM" in sub.text
    module = parse_text(KERNEL, "k.mlir")
    kernel = module.body.block.first_op
    assert {k: v.value.data for k, v in kernel.attributes["params"].data.items()} == {
        "BM": 128,
        "BK": 64,
    }


def test_override_changes_types_and_declaration():
    sub = substitute(KERNEL, "k.mlir", {"BK": 32})
    assert sub.values == {"BM": 128, "BK": 32}
    assert "tensor<128x32xbf16>" in sub.text
    assert "params = {BM = 128, BK = 32}" in sub.text


def test_text_without_parameters_is_unchanged():
    text = (EXAMPLES / "attention_causal.mlir").read_text()
    sub = substitute(text, "a.mlir")
    assert sub.text is text and sub.values == {} and sub.source_map is None


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"BQ": 1}, "unknown parameter BQ (the kernel declares BM, BK)"),
        ({"BM": "x"}, "parameter BM: expected an integer, got 'x'"),
        ({"BM": True}, "parameter BM: expected an integer, got True"),
        ({"BM": "1" * 13}, "more than 12 digits"),
    ],
)
def test_bad_overrides(overrides, message):
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        substitute(KERNEL, "k.mlir", overrides)


@pytest.mark.parametrize(
    "edit, location, message",
    [
        (
            ("tensor<$BMx$BKxbf16> ->", "tensor<$BMx$BQxbf16> ->"),
            "k.mlir:8:",
            "unknown parameter $BQ",
        ),
        (("BK = 64}", "bk = 64}"), "k.mlir:2:", "must be upper case"),
        (("BK = 64}", "BK = 6.4}"), "k.mlir:2:", "expected NAME = <integer>"),
        (("BK = 64}", "BM = 64}"), "k.mlir:2:", "parameter BM declared twice"),
        (
            ("%bm = arith.constant $BM", "%bm = arith.constant $"),
            "k.mlir:4:24",
            "expected a parameter name",
        ),
    ],
)
def test_declaration_and_reference_errors(edit, location, message):
    text = KERNEL.replace(*edit)
    assert text != KERNEL
    with pytest.raises(CompileError) as err:
        substitute(text, "k.mlir")
    assert message in str(err.value)
    assert str(err.value).startswith(location)


def test_declared_twice_and_undeclared():
    twice = KERNEL.replace("tile.return", '"x.y"() {params = {Z = 1}} : () -> ()\n  tile.return')
    with pytest.raises(CompileError, match="parameters declared twice"):
        substitute(twice, "k.mlir")
    bare = (EXAMPLES / "attention_causal.mlir").read_text()
    with pytest.raises(CompileError, match="declares no parameters, so BLOCK_N cannot be set"):
        substitute(bare, "a.mlir", {"BLOCK_N": 64})
    with pytest.raises(CompileError, match=r"parameter \$X used but the kernel declares no"):
        substitute(bare.replace("%c128 = arith.constant 128", "%c128 = arith.constant $X"), "a")


def test_locations_after_substitution_point_at_the_source():
    # A type error after two substitutions on the same line: the column is the user's.
    line = "  tile.store %x, %c[%m0, %c0] : tensor<$BMx$BKxbf16> -> !tile.tensor<?x?xbf16>"
    bad = KERNEL.replace(line, line.replace("-> !tile.tensor", "=> !tile.tensor"))
    with pytest.raises(CompileError) as err:
        parse_text(bad, "k.mlir")
    col = line.index("-> !tile") + 1
    assert str(err.value).startswith(f"k.mlir:8:{col}: error:"), str(err.value)
    # An op's location (used by the verifier) is where its name is in the source.
    module = parse_text(KERNEL, "k.mlir")
    store = [op for op in module.walk() if op.name == "tile.store"][0]
    assert (store.location.line.data, store.location.column.data) == (8, 3)


def test_parse_defines():
    assert parse_defines(["A=1", "B=-2,C=+3"]) == {"A": 1, "B": -2, "C": 3}
    for bad, msg in [
        (["A"], "expected NAME=VALUE"),
        (["=1"], "expected NAME=VALUE"),
        (["A=1", "A=2"], "-D A given twice"),
        (["A=0x10"], "expected an integer"),
    ]:
        with pytest.raises(CompileError, match=msg):
            parse_defines(bad)


def test_examples_default_parameters_give_the_unparameterised_ptx():
    """The examples' defaults are the old literal tiles: written out by hand here, the
    kernel must compile to the same PTX (parameters change no code generation)."""
    text = (EXAMPLES / "gemm.mlir").read_text()
    literal = text.replace("$BLOCK_M", "128").replace("$BLOCK_N", "256").replace("$BLOCK_K", "64")
    literal = literal.replace(
        " attributes {params = {BLOCK_M = 128, BLOCK_N = 256, BLOCK_K = 64}}", ""
    )
    assert "$" not in literal and "params" not in literal
    a = compile_source(text, "gemm.mlir", cubin=False)
    b = compile_source(literal, "gemm.mlir", cubin=False)
    assert a.ptx == b.ptx
    assert a.sidecar["kernel_params"] == {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}
    assert "kernel_params" not in b.sidecar


def test_parameters_change_the_kernel():
    res = compile_file(EXAMPLES / "gemm.mlir", cubin=False, params={"BLOCK_N": 128})
    assert res.sidecar["kernel_params"]["BLOCK_N"] == 128
    grid = res.sidecar["program_grid"]
    assert grid[1]["by"] == 128
    assert [a["access"] for a in res.sidecar["args"]] == ["read", "read", "write"]


def test_sidecar_access_of_scalars_and_read_write():
    res = compile_file(EXAMPLES / "gemm_bias.mlir", cubin=False)
    assert [a["access"] for a in res.sidecar["args"]] == ["read", "read", "read", "write", "none"]


def test_cli_define_sets_parameters_and_bad_ones_fail_cleanly(tmp_path):
    out = tmp_path / "g.ptx"
    cmd = ["compile", str(EXAMPLES / "gemm.mlir"), "-o", str(out)]
    ok = tawac([*cmd, "-D", "BLOCK_N=128"])
    assert ok.returncode == 0, ok.stderr
    assert json.loads(out.with_suffix(".json").read_text())["kernel_params"]["BLOCK_N"] == 128
    out.unlink()
    out.with_suffix(".json").unlink()
    for define, msg in [
        ("BLOCK_Q=1", "unknown parameter BLOCK_Q"),
        ("BLOCK_N", "expected NAME=VALUE"),
        ("BLOCK_N=1e3", "expected an integer"),
    ]:
        bad = tawac([*cmd, "-D", define])
        assert bad.returncode == 1
        assert msg in bad.stderr and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
        assert list(tmp_path.iterdir()) == []


def test_parameter_value_the_compiler_cannot_use_is_a_located_error():
    with pytest.raises(CompileError) as err:
        compile_file(EXAMPLES / "gemm.mlir", cubin=False, params={"BLOCK_N": 100000})
    assert str(err.value).startswith(f"{EXAMPLES / 'gemm.mlir'}:")
    assert "elements" in str(err.value)
