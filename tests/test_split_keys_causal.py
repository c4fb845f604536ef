"""Split keys (flash-decoding) of a causal attention are refused: a split whose keys all
lie past a row's diagonal leaves that row's scores all masked (-1e30), and on the GPU the
row's `s * scale - max`, contracted into one FMA, is the rounding error of a 1e29-sized
product (about 1e22): exp2 of it is inf, and the output NaN (found by
benchmarks/check_corpus.py on the H100: tests/data/attention_causal_d64_bn64.mlir and
attention_causal_d64_m192.mlir with --split-k 2 or 3, every head's first query block;
the interpreter rounds each op and cannot see it). A key-bound mask (a column iota
against the length: decode, ragged non-causal attention) never masks a whole row of a
split that has keys, and is still split."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.compiler import parse_file, run_pipeline
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "source",
    [
        "tests/data/attention_causal_d64_bn64.mlir",
        "tests/data/attention_causal_d64_m192.mlir",
        "examples/attention_causal.mlir",
        "corpus/attention_causal_blocks.mlir",
        "tests/data/triton/unseen_attention_causal.ttir",
    ],
)
def test_split_keys_of_a_causal_attention_is_refused_where_it_is_masked(source):
    module = parse_file(REPO / source)
    with pytest.raises(CompileError, match=r"split-k: .*causal") as info:
        run_pipeline(module, "canonicalize,split-k{splits=2}")
    assert ":" in str(info.value).split(" error:")[0]  # located


@pytest.mark.parametrize(
    "source",
    [
        "examples/attention_decode.mlir",
        "examples/attention_paged.mlir",
        "examples/attention.mlir",
        "tests/data/triton/unseen_gqa.ttir",
        "tests/data/triton/unseen_attention.ttir",
    ],
)
def test_split_keys_of_a_key_bound_mask_still_splits(source):
    module = parse_file(REPO / source)
    run_pipeline(module, "canonicalize,split-k{splits=2}")
    assert "tile.split_softmax" in str(module)


def test_a_causal_attention_has_no_key_loop_to_split():
    """`key_loop` (what `tawac.triton` asks before it splits a call's keys to fill the
    GPU) says no for a causal attention, yes for a key-bound mask."""
    from tawac.dialects import tile
    from tawac.passes.split_k import key_loop

    def kernel(path):
        module = parse_file(REPO / path)
        return next(o for o in module.walk() if isinstance(o, tile.KernelOp))

    assert key_loop(kernel("tests/data/triton/unseen_gqa_causal.ttir")) is None
    assert key_loop(kernel("tests/data/triton/unseen_gqa.ttir")) is not None
