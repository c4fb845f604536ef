"""Split-K on the GPU (`--split-k S`, the `split-k` pass): every split count against a
float32 reference at ragged sizes (K not a multiple of the split's chunk, splits with no
step, one row), repeated launches (the tickets reset themselves), bit-identical results
across runs (the partials are added in split order), a fused epilogue, CUDA graphs.

Each output is poisoned (NaN) first. Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from gpu_util import gemm_error as _err
from gpu_util import gemm_operands as _operands
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DECODE_TILES = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}


@functools.cache
def _kernel(example: str, splits: int, **params):
    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / example, params=params or None, split_k=splits)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    return load_kernel(r.cubin, r.sidecar)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", [2, 3, 4, 8])
@pytest.mark.parametrize(
    ("m", "n", "k"),
    [
        (1, 4096, 4096),
        (16, 1000, 1000),  # ragged N and K: 8 steps of 128, the last partial
        (100, 320, 4224),  # 33 steps: chunks of 9, 11, 17 steps and a short last one
        (300, 512, 256),  # 2 steps: with 3, 4 or 8 splits some splits run no step
        (7, 192, 64),  # 1 step
    ],
)
def test_split_k_matches_the_reference(splits, m, n, k):
    import torch

    kern = _kernel("gemm.mlir", splits, **DECODE_TILES)
    a, b, c = _operands(m, n, k, splits * 1000 + m)
    kern(a, b, c)
    torch.cuda.synchronize()
    assert _err(a, b, c) < 1e-2


@pytest.mark.gpu
@requires_gpu
def test_split_k_is_deterministic_and_its_tickets_reset():
    """Many launches on the same operands give the same bits (the last program adds the
    partials in split order, whichever it is), and each launch is complete (a ticket left
    non-zero would make a later launch's epilogue run early or never: NaNs remain)."""
    import torch

    kern = _kernel("gemm.mlir", 4, **DECODE_TILES)
    a, b, c = _operands(64, 2048, 8192, 5)
    kern(a, b, c)
    torch.cuda.synchronize()
    first = c.clone()
    assert _err(a, b, c) < 1e-2
    for _ in range(20):
        c.fill_(float("nan"))
        kern(a, b, c)
        torch.cuda.synchronize()
        assert torch.equal(c, first)


@pytest.mark.gpu
@requires_gpu
def test_split_k_default_tiles_and_other_shapes_share_one_kernel():
    """The default 128x256 tiles (two consumer warp groups arrive together), and one
    kernel object at several shapes (workspace buffers per shape)."""
    import torch

    kern = _kernel("gemm.mlir", 3)
    for m, n, k in ((256, 512, 1536), (129, 257, 200), (256, 512, 1536)):
        a, b, c = _operands(m, n, k, m + n)
        kern(a, b, c)
        torch.cuda.synchronize()
        assert _err(a, b, c) < 1e-2


@pytest.mark.gpu
@requires_gpu
def test_split_k_with_a_fused_epilogue():
    """gemm_bias: C = alpha * A B^T + bias; the last split applies alpha and the bias to
    the sum, once."""
    import torch

    kern = _kernel("gemm_bias.mlir", 4, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64)
    g = torch.Generator(device="cuda").manual_seed(9)
    m, n, k = 40, 384, 1000
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    bias = torch.randn(n, device="cuda", dtype=torch.float32, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, bias, c, 0.5)
    torch.cuda.synchronize()
    ref = 0.5 * (a.float() @ b.float().T) + bias
    assert not c.isnan().any()
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
@requires_gpu
def test_split_k_in_a_cuda_graph():
    import torch

    kern = _kernel("gemm.mlir", 2, **DECODE_TILES)
    a, b, c = _operands(16, 1024, 2048, 11)
    kern(a, b, c)  # warm-up: the workspace exists before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kern(a, b, c)
    for seed in (12, 13):
        a.copy_(torch.randn_like(a))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _err(a, b, c) < 1e-2, seed


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("example", "params", "stream", "m", "n", "k"),
    [
        ("gemm.mlir", DECODE_TILES, 8, 640, 896, 1024),  # 140 tiles: 8 split 8 ways
        ("gemm.mlir", DECODE_TILES, 8, 640, 896, 1000),  # the same, K ragged
        ("gemm.mlir", DECODE_TILES, 8, 100, 300, 4096),  # 10 tiles, fewer than the SMs
        ("gemm.mlir", {}, 4, 1280, 4096, 2000),  # 160 tiles of 128x256: 28 split 4 ways
        ("gemm.mlir", {}, 4, 1024, 2048, 512),  # 64 tiles, 8 steps: split 2 ways
        ("gemm.mlir", {"BLOCK_N": 192}, 4, 2000, 3000, 1000),  # 256 tiles: 124 split 1 way
        ("gemm_bias.mlir", {"BLOCK_N": 128}, 4, 1200, 1100, 700),  # a fused epilogue
    ],
)
def test_stream_k_matches_the_reference(example, params, stream, m, n, k):
    """Stream-K (at most `stream` programs per tile of the last wave): the whole waves'
    tiles alone, the tail's tiles split among the CTAs, every split written once; the
    same bits on every run."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / example, params=params or None, stream_k=stream)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    kern = load_kernel(r.cubin, r.sidecar)
    a, b, c = _operands(m, n, k, m + k)
    args = (a, b, c)
    ref = a.float() @ b.float().T
    if example == "gemm_bias.mlir":
        bias = torch.randn(n, device="cuda", dtype=torch.float32)
        args = (a, b, bias, c, 0.25)
        ref = 0.25 * ref + bias
    kern(*args)
    torch.cuda.synchronize()
    assert not c.isnan().any(), "unwritten (poisoned) output elements remain"
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2
    first = c.clone()
    for _ in range(5):
        c.fill_(float("nan"))
        kern(*args)
        torch.cuda.synchronize()
        assert torch.equal(c, first)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("stream", [False, True])
def test_split_and_stream_k_with_a_residual_and_from_triton(stream):
    """gemm_residual (D = alpha A B^T + beta C: the C tile comes through the producer,
    before the ticket) and the Triton tutorial's matmul (its store coordinates computed
    after the loop), split-K by 3 or stream-K by 4, at ragged sizes."""
    import torch

    from tawac.runtime import load_kernel

    opts = {"stream_k": 4} if stream else {"split_k": 3}
    r = compile_file(EXAMPLES / "gemm_residual.mlir", **opts)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    kern = load_kernel(r.cubin, r.sidecar)
    m, n, k = 1000, 1500, 1100
    a, b, d = _operands(m, n, k, 21)
    c = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    kern(a, b, c, d, 0.5, 2.0)
    torch.cuda.synchronize()
    ref = 0.5 * (a.float() @ b.float().T) + 2.0 * c.float()
    assert not d.isnan().any()
    assert ((d.float() - ref).norm() / ref.norm()).item() < 1e-2

    r = compile_file(EXAMPLES / "triton" / "matmul.ttir", **opts)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    kern = load_kernel(r.cubin, r.sidecar)
    a = torch.randn(300, 2000, device="cuda", dtype=torch.float16)
    b = torch.randn(2000, 700, device="cuda", dtype=torch.float16)
    out = torch.full((300, 700), float("nan"), device="cuda", dtype=torch.float16)
    kern(a, b, out)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert not out.isnan().any()
    assert ((out.float() - ref).norm() / ref.norm()).item() < 1e-2
