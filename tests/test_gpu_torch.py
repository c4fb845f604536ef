"""tawac.torch on the GPU: the examples as PyTorch operators, eager, under torch.compile and
in a CUDA graph, against float32 references.

Outputs are poisoned with NaN first: in-place outputs directly, functional outputs by
freeing a NaN tensor of the same size just before the call (the caching allocator hands
its block to the output's torch.empty). Marked `gpu`; skipped where no Hopper GPU is
present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LOG2E = 1.4426950408889634
TOL = 2e-2

_kernels: dict[tuple, object] = {}


def _kernel(name: str, params: dict | None = None):
    import tawac.torch

    key = (name, tuple(sorted((params or {}).items())))
    if key not in _kernels:
        _kernels[key] = tawac.torch.kernel(EXAMPLES / name, params=params)
    return _kernels[key]


def _operands(m: int, n: int, k: int, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    return a, b


def _poison(shape, dtype) -> None:
    """Leaves a NaN-filled block of this size in the caching allocator."""
    import torch

    t = torch.full(shape, float("nan"), device="cuda", dtype=dtype)
    del t


def _err(out, ref) -> float:
    import torch

    assert not torch.isnan(out).any(), "unwritten (poisoned) output elements remain"
    return ((out.float() - ref).norm() / ref.norm()).item()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(1024, 1024, 1024), (1000, 2000, 3000), (129, 257, 64)])
@pytest.mark.parametrize("params", [None, {"BLOCK_N": 128}])
def test_gemm_functional_and_in_place(m, n, k, params):
    import torch

    gemm = _kernel("gemm.mlir", params)
    a, b = _operands(m, n, k, m + n + k)
    ref = a.float() @ b.float().T
    _poison((m, n), torch.bfloat16)
    c = gemm(a, b)
    torch.cuda.synchronize()
    assert c.shape == (m, n) and c.dtype == torch.bfloat16 and c.device == a.device
    assert _err(c, ref) < TOL
    c2 = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert gemm(a, b, c2) is None
    torch.cuda.synchronize()
    assert _err(c2, ref) < TOL
    # The operator (what torch.compile calls) and the direct eager path agree.
    _poison((m, n), torch.bfloat16)
    c3 = gemm.op(a, b)
    torch.cuda.synchronize()
    assert torch.equal(c3, c)


@pytest.mark.gpu
@requires_gpu
def test_gemm_arguments_are_checked():
    import torch

    from tawac.runtime import LaunchError

    gemm = _kernel("gemm.mlir")
    a, b = _operands(256, 256, 128, 1)
    with pytest.raises(LaunchError, match="size K differs"):
        gemm(a, b[:, :64].contiguous())
    with pytest.raises(LaunchError, match="must have dtype"):
        gemm(a, b.float())
    with pytest.raises(TypeError, match="got 1"):
        gemm(a)
    with pytest.raises(LaunchError, match="must be on a CUDA device"):
        gemm(a.cpu(), b.cpu())
    torch.cuda.synchronize()


@pytest.mark.gpu
@requires_gpu
def test_gemm_under_torch_compile():
    """fullgraph=True with inductor: the tawac operator is one extern node; the result
    equals the eager one (the kernel is deterministic)."""
    import torch

    gemm = _kernel("gemm.mlir")
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: gemm(a, b) * 2, fullgraph=True)
    for m, n, k, seed in [(512, 768, 256, 2), (384, 256, 320, 3)]:
        a, b = _operands(m, n, k, seed)
        out = f(a, b)
        eager = gemm(a, b) * 2
        torch.cuda.synchronize()
        assert out.shape == (m, n) and out.dtype == torch.bfloat16
        assert _err(out, (a.float() @ b.float().T) * 2) < TOL
        assert torch.equal(out, eager)


@pytest.mark.gpu
@requires_gpu
def test_gemm_in_place_under_torch_compile_dynamic():
    import torch

    gemm = _kernel("gemm.mlir")
    torch._dynamo.reset()

    def fn(a, b, c):
        gemm(a, b, c)
        return c.float().sum(dim=1)

    f = torch.compile(fn, fullgraph=True, dynamic=True)
    for m, n, k, seed in [(256, 512, 128, 4), (640, 384, 192, 5)]:
        a, b = _operands(m, n, k, seed)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        rows = f(a, b, c)
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        assert _err(c, ref) < TOL
        assert _err(rows, c.float().sum(dim=1)) < 1e-3


@pytest.mark.gpu
@requires_gpu
def test_gemm_in_a_cuda_graph_replays_on_new_contents():
    import torch

    gemm = _kernel("gemm.mlir")
    a, b = _operands(384, 256, 320, 6)
    c_in = torch.empty(384, 256, device="cuda", dtype=torch.bfloat16)
    gemm(a, b)  # warm up outside the capture: compile, module load
    gemm(a, b, c_in)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = gemm(a, b)
        gemm(a, b, c_in)
    for seed in (7, 8):
        na, nb = _operands(384, 256, 320, seed)
        a.copy_(na)
        b.copy_(nb)
        c.fill_(float("nan"))
        c_in.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        assert _err(c, ref) < TOL
        assert _err(c_in, ref) < TOL


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("b", "h", "s"), [(1, 2, 256), (2, 3, 1000)])
def test_attention_functional_matches_sdpa(b, h, s):
    import torch

    attn = _kernel("attention.mlir")
    d = 128
    torch.manual_seed(b * 100 + h * 10 + s)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    _poison((b, h, s, d), torch.bfloat16)
    o = attn(q, k, v, d**-0.5 * LOG2E)
    torch.cuda.synchronize()
    assert o.shape == q.shape and o.dtype == torch.bfloat16
    assert _err(o, ref) < TOL
    torch._dynamo.reset()
    f = torch.compile(lambda q, k, v: attn(q, k, v, d**-0.5 * LOG2E).float(), fullgraph=True)
    assert _err(f(q, k, v), ref) < TOL
