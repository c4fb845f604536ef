"""The softmax's code-generation knobs. `exp2_fma`: every N-th exp2 of a tile computed on
the FMA and integer pipes; the algorithm, step by step in float32 as the PTX does it, is
within 2e-4 of 2^x over the softmax's range and exact at 0, and the PTX has it where
asked and nowhere else. `skip_rescale`: the rescale of the loop-carried O behind a
warp-uniform test of its factors, in the loop only."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tawac.backend_ptx.lowering.scalar import _EXP2_CUBIC, _ROUND_FLOOR
from tawac.driver import compile_file
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _emulate(x: np.ndarray) -> np.ndarray:
    """The PTX sequence of `_exp2_fma` in float32 (add.rm: the sum is exact here, so
    rounding toward -inf is floor)."""
    f32 = np.float32
    x = np.maximum(x.astype(f32), f32(-127.0))
    t = (f32(_ROUND_FLOOR) + np.floor(x)).astype(f32)
    n = t - f32(_ROUND_FLOOR)
    f = (x - n).astype(f32)
    c1, c2, c3 = (f32(c) for c in _EXP2_CUBIC)
    p = (f * c3 + c2).astype(f32)
    p = (p * f + c1).astype(f32)
    p = (p * f + f32(1.0)).astype(f32)
    e = (t.view(np.uint32) << np.uint32(23)).astype(np.uint32)
    return (p.view(np.uint32) + e).view(f32)


def test_the_cubic_is_within_2e_4_of_exp2_on_the_softmax_range():
    x = np.concatenate([np.linspace(-126, 0, 200001), -np.logspace(-8, 0, 1000)])
    got = _emulate(x).astype(np.float64)
    want = np.exp2(x.astype(np.float32).astype(np.float64))
    assert np.max(np.abs(got / want - 1)) < 2e-4
    assert _emulate(np.zeros(1))[0] == 1.0
    assert _emulate(np.array([-1000.0, -np.inf]))[0] < 1e-37  # clamped: 2^-127 or less


def _loop_ops(ptx: str) -> tuple[int, int]:
    return len(re.findall(r"ex2\.approx", ptx)), len(re.findall(r"add\.rm\.f32", ptx))


def test_every_nth_exponential_of_a_tile_moves_to_the_fma_pipe():
    base = compile_file(EXAMPLES / "attention_d64.mlir", cubin=False).ptx
    quarter = compile_file(EXAMPLES / "attention_d64.mlir", cubin=False, exp2_fma=4).ptx
    ex2, cubic = _loop_ops(base)
    ex2_q, cubic_q = _loop_ops(quarter)
    assert cubic == 0 and cubic_q > 0
    assert ex2_q + cubic_q == ex2  # each exponential one way or the other
    assert abs(cubic_q * 4 - ex2) <= 8  # a quarter of the tiles' (row scalars stay)
    assert "convert-to-ptx{exp2-fma=4}" in PipelineOptions(exp2_fma=4).pipeline()
    assert PipelineOptions().pipeline().endswith(",convert-to-ptx")


def test_exp2_fma_out_of_range_is_refused():
    with pytest.raises(CompileError, match="exp2-fma must be"):
        compile_file(EXAMPLES / "attention_d64.mlir", cubin=False, exp2_fma=9)


def test_skip_rescale_guards_the_loops_rescale_only():
    base = compile_file(EXAMPLES / "attention.mlir", cubin=False).ptx
    skip = compile_file(EXAMPLES / "attention.mlir", cubin=False, skip_rescale=True).ptx
    assert "vote.sync.all" not in base
    assert skip.count("vote.sync.all.pred") == 1  # the loop's; not the peeled last one
    at = skip.index("vote.sync.all.pred")
    assert re.search(r"@%p\d+ bra\.uni \$L_rescaled_\d+;", skip[at : at + 200])
    assert "convert-to-ptx{skip-rescale=true}" in PipelineOptions(skip_rescale=True).pipeline()
    both = PipelineOptions(skip_rescale=True, exp2_fma=2).pipeline()
    assert both.endswith("convert-to-ptx{exp2-fma=2 skip-rescale=true}")
