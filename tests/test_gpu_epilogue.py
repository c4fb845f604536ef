"""Kernels that read a second 2-d tile in consumer code, on the GPU:
the tile comes through TMA into shared memory (an aref of its own, loaded by the
producer) and into the accumulator layout's registers by ld.shared.

- examples/gemm_residual.mlir: D = alpha * (A B^T) + beta * C, bf16 C, at ragged sizes,
  persistent and not, 128x256 and 128x128 tiles;
- tests/data: an f32 residual (D = A B^T + C), a gated epilogue
  (D = A B^T * sigmoid(G)), C as the K loop's initial accumulator, and attention with
  an additive bias tile loaded in the key loop (one-slot rings at BLOCK_N = 128, a
  3-deep ring and the two-stage consumer loop at BLOCK_N = 64).

Random inputs, a NaN-poisoned output, compared with a float32 torch reference (relative
error < 1e-2). Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "gemm_residual.mlir"
DATA = Path(__file__).resolve().parent / "data"
LOG2E = 1.4426950408889634

_cache: dict[tuple, object] = {}


def _kernel(path: Path, params: dict | None = None, persistent: bool = True):
    from tawac.runtime import load_kernel

    key = (path, tuple(sorted((params or {}).items())), persistent)
    if key not in _cache:
        r = compile_file(path, params=params, persistent=persistent)
        _cache[key] = load_kernel(r.cubin, r.sidecar)
    return _cache[key]


def _operands(m: int, n: int, k: int, c_dtype: str, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.randn(m, n, device="cuda", dtype=getattr(torch, c_dtype), generator=g)
    d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    return a, b, c, d


def _err(out, ref) -> float:
    import torch

    torch.cuda.synchronize()
    assert not out.isnan().any(), "unwritten (poisoned) output elements remain"
    return ((out.float() - ref).norm() / ref.norm()).item()


SIZES = [(300, 520, 200), (129, 257, 64), (1024, 1024, 512), (128, 256, 64), (64, 40, 8)]
# 128x128 tiles: (2048, 2048, 256) has 256 of them, several per persistent CTA.
VARIANT_SIZES = [(300, 520, 200), (129, 257, 64), (1024, 768, 512), (2048, 2048, 256)]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), SIZES)
@pytest.mark.parametrize("block_n", [256, 128])
@pytest.mark.parametrize("persistent", [True, False])
def test_gemm_residual_matches_torch(m, n, k, block_n, persistent):
    """alpha (A B^T) + beta C with C bf16: every output element written, C's rows and
    columns past M and N read as zeros by TMA and never stored."""
    kern = _kernel(EXAMPLE, {"BLOCK_N": block_n}, persistent)
    a, b, c, d = _operands(m, n, k, "bfloat16", m + n + k)
    alpha, beta = 0.75, -1.5
    kern(a, b, c, d, alpha, beta)
    ref = alpha * (a.float() @ b.float().T) + beta * c.float()
    assert _err(d, ref) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("block_n", [256, 128])
@pytest.mark.parametrize("persistent", [True, False])
def test_gemm_residual_scalars_and_many_tiles(block_n, persistent):
    """beta = 0 gives the plain product, alpha = 0 the scaled residual (exactly); 256 or
    512 tiles, so a persistent CTA works on several and its C slots (one at BLOCK_N 256,
    two at 128) are released and refilled, their phases flipping."""
    import torch

    kern = _kernel(EXAMPLE, {"BLOCK_N": block_n}, persistent)
    a, b, c, d = _operands(4096, 2048, 128, "bfloat16", 11)
    for alpha, beta in ((1.0, 0.0), (0.0, 2.0), (0.5, 0.25)):
        d.fill_(float("nan"))
        kern(a, b, c, d, alpha, beta)
        ref = alpha * (a.float() @ b.float().T) + beta * c.float()
        if alpha == 0.0:
            torch.cuda.synchronize()
            assert torch.equal(d, (beta * c.float()).to(torch.bfloat16))
        assert _err(d, ref) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), VARIANT_SIZES)
@pytest.mark.parametrize("persistent", [True, False])
def test_residual_f32_matches_torch(m, n, k, persistent):
    """D = A B^T + C with an f32 C: 32-column TMA boxes, ld.shared.v2.f32."""
    kern = _kernel(DATA / "gemm_residual_f32.mlir", None, persistent)
    a, b, c, d = _operands(m, n, k, "float32", 2 * m + n + k)
    kern(a, b, c, d)
    assert _err(d, a.float() @ b.float().T + c) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), VARIANT_SIZES)
@pytest.mark.parametrize("persistent", [True, False])
def test_gated_epilogue_matches_torch(m, n, k, persistent):
    """D = A B^T * sigmoid(G) with a bf16 gate G."""
    import torch

    kern = _kernel(DATA / "gemm_gated.mlir", None, persistent)
    a, b, g, d = _operands(m, n, k, "bfloat16", 3 * m + n + k)
    kern(a, b, g, d)
    ref = (a.float() @ b.float().T) * torch.sigmoid(g.float())
    assert _err(d, ref) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), VARIANT_SIZES)
@pytest.mark.parametrize("persistent", [True, False])
def test_accumulating_onto_c_matches_torch(m, n, k, persistent):
    """C (f32) as the K loop's initial accumulator: D = C + A B^T."""
    kern = _kernel(DATA / "gemm_acc_init.mlir", None, persistent)
    a, b, c, d = _operands(m, n, k, "float32", 4 * m + n + k)
    kern(a, b, c, d)
    assert _err(d, a.float() @ b.float().T + c) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("b", "h", "s"), [(1, 1, 128), (2, 3, 512), (2, 2, 1000), (1, 3, 77), (4, 8, 1024)]
)
@pytest.mark.parametrize("block_n", [128, 64])
@pytest.mark.parametrize("persistent", [True, False])
def test_attention_with_bias_tile_matches_torch(b, h, s, block_n, persistent):
    """softmax((Q K^T + Bias) * scale) V, the bias tile of each key block loaded by the
    producer in the key loop and read into the layout of S."""
    import torch

    kern = _kernel(DATA / "attention_bias.mlir", {"BLOCK_N": block_n}, persistent)
    g = torch.Generator(device="cuda").manual_seed(b * 100 + h * 10 + s)
    q, k, v = (
        torch.randn(b, h, s, 128, device="cuda", dtype=torch.bfloat16, generator=g)
        for _ in range(3)
    )
    bias = (2 * torch.randn(s, s, device="cuda", generator=g)).to(torch.bfloat16)
    o = torch.full_like(q, float("nan"))
    scale = 128**-0.5
    kern(q, k, v, o, bias, scale * LOG2E)
    scores = (q.float() @ k.float().transpose(-1, -2) + bias.float()) * scale
    ref = torch.softmax(scores, -1) @ v.float()
    assert _err(o, ref) < 1e-2
