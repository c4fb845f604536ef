"""The grouped GEMM (`examples/gemm_grouped.mlir`) on the GPU: uneven groups, empty
experts, padding blocks (id -1) and an id past the last row block, against a float32
loop over the experts; the expert id read by `tile.load_index` in both warp-group roles.
Marked `gpu`; skipped where no Hopper GPU is present."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("block", "options"),
    [
        (128, {}),
        (64, {"BLOCK_N": 128}),
        (128, {"split_k": 2}),
        (128, {"stream_k": 4}),
        (64, {"persistent": False}),
    ],
)
def test_grouped_gemm_matches_a_loop_over_experts(block, options):
    import torch

    from tawac.runtime import load_kernel

    params = {"BLOCK_M": block, **{k: v for k, v in options.items() if k.isupper()}}
    knobs = {k: v for k, v in options.items() if not k.isupper()}
    r = compile_file(EXAMPLES / "gemm_grouped.mlir", params=params, **knobs)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    kern = load_kernel(r.cubin, r.sidecar)
    g = torch.Generator(device="cuda").manual_seed(block)
    experts, n, k = 5, 384, 320
    counts = [130, 0, 7, block, 300]  # uneven, one empty, one exactly a block
    blocks = [-(-m // block) for m in counts]
    rows = sum(blocks) * block
    a = torch.zeros(rows, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    ids, start = [], 0
    for e, (m, nb) in enumerate(zip(counts, blocks, strict=True)):
        a[start : start + m] = torch.randn(m, k, device="cuda", generator=g).bfloat16()
        ids += [e] * nb
        start += nb * block
    ids += [-1]  # a padding block: its rows get zeros, no expert is read
    a = torch.cat([a, torch.zeros(block, k, device="cuda", dtype=torch.bfloat16)])
    ids_t = torch.tensor(ids, device="cuda", dtype=torch.int32)
    c = torch.full((a.shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, w, ids_t, c)
    torch.cuda.synchronize()
    assert not c.isnan().any()
    start = 0
    for e, (m, nb) in enumerate(zip(counts, blocks, strict=True)):
        if m:
            ref = a[start : start + m].float() @ w[e].float().T
            got = c[start : start + m].float()
            assert ((got - ref).norm() / ref.norm()).item() < 1e-2, e
        start += nb * block
    assert torch.equal(c[start:], torch.zeros_like(c[start:]))  # the padding block


@pytest.mark.gpu
@requires_gpu
def test_fp8_grouped_gemm_matches_scaled_mm_per_expert():
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / "gemm_grouped_fp8.mlir", params={"BLOCK_M": 64})
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    kern = load_kernel(r.cubin, r.sidecar)
    f8 = torch.float8_e4m3fn
    experts, n, k, block = 3, 256, 384, 64
    counts = [70, 0, 64]
    blocks = [-(-m // block) for m in counts]
    a = torch.zeros(sum(blocks) * block, k, device="cuda").to(f8)
    w = (torch.randn(experts, n, k, device="cuda") * 0.5).to(f8)
    ids, start = [], 0
    for e, (m, nb) in enumerate(zip(counts, blocks, strict=True)):
        a[start : start + m] = (torch.randn(m, k, device="cuda") * 0.5).to(f8)
        ids += [e] * nb
        start += nb * block
    c = torch.full((a.shape[0], n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, w, torch.tensor(ids, device="cuda", dtype=torch.int32), c, 0.5, 0.25)
    torch.cuda.synchronize()
    assert not c.isnan().any()
    start = 0
    for e, (m, nb) in enumerate(zip(counts, blocks, strict=True)):
        if m:
            ref = (a[start : start + m].float() @ w[e].float().T) * 0.125
            got = c[start : start + m].float()
            assert ((got - ref).norm() / ref.norm()).item() < 1e-2, e
        start += nb * block


@pytest.mark.gpu
@requires_gpu
def test_grouped_gemm_through_tawac_torch():
    """`tawac.torch.kernel` takes the i32 expert ids like any tensor: functional (C
    allocated from the sizes) and in place, eagerly and in a CUDA graph."""
    import torch

    import tawac.torch

    gemm = tawac.torch.kernel(EXAMPLES / "gemm_grouped.mlir", params={"BLOCK_M": 64})
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(4 * 64, 256, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(2, 192, 256, device="cuda", dtype=torch.bfloat16, generator=g)
    ids = torch.tensor([1, 1, 0, -1], device="cuda", dtype=torch.int32)
    ref = torch.cat(
        [a[:128].float() @ w[1].float().T, a[128:192].float() @ w[0].float().T,
         torch.zeros(64, 192, device="cuda")]
    )  # fmt: skip
    c = gemm(a, w, ids)
    torch.cuda.synchronize()
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2
    out = torch.full_like(c, float("nan"))
    graph = torch.cuda.CUDAGraph()
    gemm(a, w, ids, out)  # warm-up before the capture
    with torch.cuda.graph(graph):
        gemm(a, w, ids, out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, c)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("block", "block_n", "n"), [(64, 256, 320), (128, 256, 320), (128, 128, 328)]
)
def test_grouped_gemm_over_unpadded_offsets(block, block_n, n):
    """`gemm_grouped_offsets.mlir`: torch._grouped_mm's layout (no padding), blocks
    clipped at their expert's last row by a bounded store; the rows of the next expert a
    block reads are never written by it, whatever order the blocks run in. The clipped
    blocks leave as 16-byte vectors (eight columns per lane after a quad transpose):
    N = 328 ends inside a group of 32 columns, at a vector's edge."""
    import torch

    from tawac.runtime import load_kernel

    params = {"BLOCK_M": block, "BLOCK_N": block_n}
    r = compile_file(EXAMPLES / "gemm_grouped_offsets.mlir", params=params)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    assert "st.global.v4.b32" in r.ptx and "st.global.b16" not in r.ptx
    kern = load_kernel(r.cubin, r.sidecar)
    g = torch.Generator(device="cuda").manual_seed(block)
    counts = [130, 0, 7, block, 300, 1]
    experts, k = len(counts), 256
    tokens = sum(counts)
    a = torch.randn(tokens, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    ex, st, en, row = [], [], [], 0
    for e, m in enumerate(counts):
        for first in range(row, row + m, block):
            ex, st, en = ex + [e], st + [first], en + [row + m]
        row += m
    ex.append(-1), st.append(0), en.append(0)  # a block of no work
    as_t = lambda v: torch.tensor(v, device="cuda", dtype=torch.int32)  # noqa: E731
    c = torch.full((tokens, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, w, as_t(ex), as_t(st), as_t(en), c)
    torch.cuda.synchronize()
    assert not c.isnan().any()
    row = 0
    for e, m in enumerate(counts):
        if m:
            ref = a[row : row + m].float() @ w[e].float().T
            got = c[row : row + m].float()
            assert ((got - ref).norm() / ref.norm()).item() < 1e-2, e
        row += m
