"""A tile larger than a TMA box (256 elements along a dimension, `HOPPER.tma_max_box`)
is a located compile error, not a launch failure: benchmarks/check_corpus.py found
`--widen 2` of 256-row tiles (and of the 192-row attention) compiling to 512- and
384-row boxes that cuTensorMapEncodeTiled refused at launch (H100, 2026-12-06)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.driver import compile_module, parse_file
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("source", "params"),
    [
        ("examples/gemm.mlir", {"BLOCK_M": 256, "BLOCK_N": 128}),
        ("examples/attention_d64.mlir", None),  # 192 rows
    ],
)
def test_a_box_over_256_rows_is_a_located_error(source, params):
    with pytest.raises(CompileError, match=r"TMA copies at most 256") as info:
        compile_module(parse_file(REPO / source, params=params), widen=2)
    assert str(info.value).startswith(f"{REPO / source}:") or str(info.value).startswith(source)


def test_a_256_row_box_compiles():
    res = compile_module(parse_file(REPO / "examples/gemm.mlir", params={"BLOCK_M": 256}))
    assert "cp.async.bulk.tensor" in res.ptx


def test_an_mma_depth_the_ring_cannot_hold_is_a_located_error():
    """Found by the same sweep: `--mma-depth 1` on a kernel whose ring fits one stage
    was refused without a location."""
    with pytest.raises(CompileError, match=r"mma-depth must satisfy .* shared memory") as e:
        compile_module(parse_file(REPO / "tests/data/attention_bias.mlir"), mma_depth=1)
    assert str(e.value).startswith(str(REPO / "tests/data/attention_bias.mlir") + ":")
