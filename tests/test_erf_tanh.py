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
