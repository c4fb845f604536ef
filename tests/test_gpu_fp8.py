"""fp8 GEMMs on the GPU: examples/gemm_fp8.mlir (e4m3 x e4m3) and its e5m2 x e5m2 and
e4m3 x e5m2 forms, random inputs, NaN-poisoned outputs, compared with the float32
product of the dequantised inputs and, where cuBLAS has the format pair, with
`torch._scaled_mm` (per-tensor scales, bf16 out).

Marked `gpu`; skipped where no Hopper GPU is present.  Run on the device with
`scripts/gpu.sh tests`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu
from test_fp8 import FP8, ROWCOL, fp8_gemm_text

from tawac.driver import compile_file, compile_source

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TOL = 2e-2

# (M, N, K): ragged M and N (not multiples of the 128x256 tile), K a multiple of 16
# bytes (TMA's stride rule) but not of BLOCK_K = 128 (zero-filled boxes), then K = 100
# (rows of 100 bytes: the runtime copies the operands into padded buffers).
SHAPES = [
    (128, 256, 128),
    (300, 520, 384),
    (1000, 777, 208),
    (129, 257, 64),
    (2048, 2048, 2048),
    (333, 4000, 1024),
    (200, 300, 100),
]
PAIRS = [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")]

_cache: dict[tuple, object] = {}


def _kernel(a: str, b: str):
    from tawac.runtime import load_kernel

    if (a, b) not in _cache:
        if (a, b) == ("e4m3", "e4m3"):
            r = compile_file(EXAMPLES / "gemm_fp8.mlir")
        else:
            r = compile_source(fp8_gemm_text(FP8[a], FP8[b]), f"gemm_fp8_{a}_{b}.mlir")
        _cache[(a, b)] = load_kernel(r.cubin, r.sidecar)
    return _cache[(a, b)]


def _torch_dtype(fmt: str):
    import torch

    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]


def _fp8(shape, fmt: str, gen, scale: float = 1.0):
    """Random fp8 values: drawn in float32, scaled, clamped to the format, rounded."""
    import torch

    dt = _torch_dtype(fmt)
    x = torch.randn(shape, device="cuda", generator=gen) * scale
    finite = torch.finfo(dt).max
    return x.clamp(-finite, finite).to(dt)


def _reference(a, b, sa: float, sb: float):
    """float32 product of the dequantised inputs, TF32 off."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return (a.float() @ b.float().T) * (sa * sb)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _rel(out, ref) -> float:
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def _scaled_mm(a, b, sa: float, sb: float):
    """cuBLAS's fp8 GEMM (b column-major: the transpose of a row-major NxK tensor), or
    None where this torch has none or cuBLAS rejects the format pair or the shape
    (e5m2 x e5m2; sizes not multiples of 16)."""
    import torch

    fn = getattr(torch, "_scaled_mm", None)
    if fn is None:
        return None
    scale_a = torch.tensor(sa, device="cuda", dtype=torch.float32)
    scale_b = torch.tensor(sb, device="cuda", dtype=torch.float32)
    try:
        out = fn(a, b.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)
    except (RuntimeError, TypeError, ValueError):
        return None
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("a_fmt,b_fmt", PAIRS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_fp8_gemm(a_fmt, b_fmt, m, n, k):
    import torch

    kern = _kernel(a_fmt, b_fmt)
    gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    a = _fp8((m, k), a_fmt, gen)
    b = _fp8((n, k), b_fmt, gen)
    sa, sb = 0.5, 1.75
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, c, sa, sb)
    torch.cuda.synchronize()
    assert not torch.isnan(c).any(), "unwritten (poisoned) output elements remain"
    ref = _reference(a, b, sa, sb)
    err = _rel(c, ref)
    assert err < TOL, f"relative error {err:.2e} against the float32 reference"
    blas = _scaled_mm(a, b, sa, sb)
    if blas is not None:
        assert _rel(blas, ref) < TOL  # the reference is what cuBLAS computes too
        err = _rel(c, blas)
        assert err < TOL, f"relative error {err:.2e} against torch._scaled_mm"


@pytest.mark.gpu
@requires_gpu
def test_fp8_gemm_is_exact_on_small_integers():
    """-1, 0 and 1 are exact in e4m3, and with 256 nonzero terms every sum is an integer
    of at most 256, exact in f32 and bf16: the output must match the reference bit for
    bit, so a wrong element, byte offset or swizzle cannot hide in the tolerance."""
    import torch

    kern = _kernel("e4m3", "e4m3")
    m, n, k = 300, 520, 384
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-1, 2, (m, k), device="cuda", generator=gen).float()
    b = torch.randint(-1, 2, (n, k), device="cuda", generator=gen).float()
    b[:, ::3] = 0  # 256 of the 384 terms left: every dot product within bf16's integers
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a8, b8, c, 1.0, 1.0)
    torch.cuda.synchronize()
    ref = a @ b.T
    assert ref.abs().max() <= 256
    assert torch.equal(c.float(), ref)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("m,n,k", [(300, 520, 384), (1000, 130, 256)])
def test_fp8_row_and_column_scales(m, n, k):
    """tests/data/gemm_fp8_rowcol.mlir: per-row scales of A and per-column scales of B
    (f32 vectors, broadcast in the epilogue), e4m3 x e5m2."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(ROWCOL)
    kern = load_kernel(r.cubin, r.sidecar)
    gen = torch.Generator(device="cuda").manual_seed(k)
    a, b = _fp8((m, k), "e4m3", gen), _fp8((n, k), "e5m2", gen)
    sa = torch.rand(m, device="cuda", generator=gen) + 0.5
    sb = torch.rand(n, device="cuda", generator=gen) + 0.5
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, sa, sb, c)
    torch.cuda.synchronize()
    assert not torch.isnan(c).any()
    ref = _reference(a, b, 1.0, 1.0) * sa[:, None] * sb[None, :]
    assert _rel(c, ref) < TOL


@pytest.mark.gpu
@requires_gpu
def test_fp8_example_through_the_runner():
    """`tawac run`'s engine: random fp8 inputs (make_args), the interpreter as reference."""
    from tawac.runtime.runner import run_kernel_file

    def compile_fn(p):
        r = compile_file(p)
        return r.cubin, r.sidecar, r.kernel

    sizes = {"M": 1000, "N": 1500, "K": 512, "scale_a": 0.25, "scale_b": 2.0}
    res = run_kernel_file(EXAMPLES / "gemm_fp8.mlir", sizes, None, compile_fn, rep_ms=5, tol=TOL)
    assert res["ok"] and not res["nan"], res
