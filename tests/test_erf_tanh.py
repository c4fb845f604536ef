"""The erf and tanh that `convert-to-ptx` emits (PTX has no erf, and tanh.approx.f32 is
2^-11 off), evaluated step by step in float32 as the PTX computes them (the same
coefficients, one rounding per instruction; ex2.approx as exact exp2 rounded): within
4e-7 of the exact functions over [-7, 7]. The FileCheck test
`convert-to-ptx-erf-tanh.mlir` checks the instruction sequence."""

from __future__ import annotations

import math

import pytest

np = pytest.importorskip("numpy")

from tawac.backend_ptx.lowering.scalar import _ERFC, _LOG2E  # noqa: E402

X = np.linspace(-7, 7, 100001).astype(np.float32)
F = np.float32


def test_erf_within_4e7():
    z = np.maximum(X, -X)
    t = (F(1) / (z * F(0.5) + F(1))).astype(np.float32)
    p = np.full_like(t, F(_ERFC[-1]))
    for c in reversed(_ERFC[:-1]):
        p = (p * t + F(c)).astype(np.float32)
    y = (-z * z + p).astype(np.float32)
    e = np.exp2((y * F(_LOG2E)).astype(np.float32)).astype(np.float32)
    r = (F(1) - (t * e).astype(np.float32)).astype(np.float32)
    got = np.where(X < 0, -r, r)
    ref = np.array([math.erf(float(v)) for v in X])
    assert np.abs(got - ref).max() < 4e-7


def test_tanh_within_3e7():
    e = np.exp2((X * F(2 * _LOG2E)).astype(np.float32)).astype(np.float32)
    got = (F(1) - F(2) * (F(1) / (e + F(1))).astype(np.float32)).astype(np.float32)
    assert np.abs(got - np.tanh(X.astype(np.float64))).max() < 3e-7


def test_the_cost_model_prices_erf_and_tanh_as_their_sequences():
    from xdsl.dialects import math as xmath
    from xdsl.dialects import test as xdsl_test
    from xdsl.dialects.builtin import TensorType, f32

    from tawac.schedule.cost import NoCostModel, op_cost
    from tawac.target import Target

    x = xdsl_test.TestOp(result_types=[TensorType(f32, [128, 128])]).results[0]
    exp2 = op_cost(xmath.Exp2Op(x), 2, Target())
    erf = op_cost(xmath.ErfOp(x), 2, Target())
    tanh = op_cost(xmath.TanhOp(x), 2, Target())
    assert {p.unit for p in erf.parts} == {"mufu", "fma"}
    assert erf.latency > tanh.latency > exp2.latency
    with pytest.raises(NoCostModel):
        op_cost(xmath.SinOp(x), 2, Target())


def test_an_op_without_lowering_in_a_main_loop_is_one_located_error(tmp_path):
    """Found by fuzzing (`math.exp2` -> `math.erf` in attention's key loop: the cost
    model had no price for it, an internal error). erf now compiles there; an op tawac
    does not lower (`math.sin`) is one located error, not an internal one."""
    from pathlib import Path

    from tawac.driver import compile_file
    from tawac.support.diagnostics import CompileError

    src = (Path(__file__).resolve().parent.parent / "examples" / "attention_d64.mlir").read_text()
    erf = tmp_path / "erf.mlir"
    erf.write_text(src.replace("math.exp2", "math.erf"))
    assert "rcp.rn.f32" in compile_file(erf, cubin=False).ptx
    sin = tmp_path / "sin.mlir"
    sin.write_text(src.replace("math.exp2", "math.sin"))
    with pytest.raises(CompileError, match=r"sin\.mlir:\d+:\d+: .*'math\.sin'"):
        compile_file(sin, cubin=False)
