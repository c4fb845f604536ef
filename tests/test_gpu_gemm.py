"""GEMM on the GPU: random inputs, poisoned outputs, compared with a float32 reference.

Marked `gpu`; skipped where no Hopper GPU is present.  Run on the device with
`scripts/gpu.sh tests`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 8192, 1024),
    (1000, 2000, 3000),
    (129, 257, 65),
    (128, 256, 64),
]

_cache: dict[str, tuple] = {}


def _compiled(name: str):
    if name not in _cache:
        r = compile_file(EXAMPLES / name)
        _cache[name] = (r.cubin, r.sidecar, r.kernel)
    return _cache[name]


def _torch_gemm_check(name: str, m: int, n: int, k: int, dtype, b_kxn: bool = False) -> float:
    from tawac.runtime import load_kernel

    cubin, side, _ = _compiled(name)
    return _run_abt(load_kernel(cubin, side), m, n, k, dtype, b_kxn)


def _run_abt(kern, m: int, n: int, k: int, dtype, b_kxn: bool = False) -> float:
    """Runs C = A·Bᵀ (A·B with `b_kxn`) on fresh random inputs into a NaN-poisoned C;
    returns the relative error against a float32 reference."""
    import torch

    torch.manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = (
        torch.randn(k, n, device="cuda", dtype=dtype)
        if b_kxn
        else torch.randn(n, k, device="cuda", dtype=dtype)
    )
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    kern(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ (b.float() if b_kxn else b.float().T)
    assert not torch.isnan(c).any(), "unwritten (poisoned) output elements remain"
    return ((c.float() - ref).norm() / ref.norm()).item()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
@pytest.mark.parametrize(
    ("example", "dtype_name"), [("gemm.mlir", "bfloat16"), ("gemm_fp16.mlir", "float16")]
)
def test_gemm_matches_float32_reference(example, dtype_name, m, n, k):
    import torch

    err = _torch_gemm_check(example, m, n, k, getattr(torch, dtype_name))
    tol = 1e-2 if dtype_name == "bfloat16" else 2e-3
    assert err < tol, f"relative error {err:.3e} for {m}x{n}x{k}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("m", "n", "k"), [(4096, 4096, 4096), (1000, 2000, 3000), (129, 257, 65), (128, 256, 64)]
)
def test_gemm_b_not_transposed(m, n, k):
    """C = A * B with B stored KxN: the MMA reads B MN-major (transposed descriptor)."""
    import torch

    err = _torch_gemm_check("gemm_nn.mlir", m, n, k, torch.bfloat16, b_kxn=True)
    assert err < 1e-2, f"relative error {err:.3e} for {m}x{n}x{k}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(1024, 1024, 512), (1000, 2000, 3000), (129, 257, 65)])
def test_gemm_bias_epilogue(m, n, k):
    import torch

    from tawac.runtime import load_kernel

    cubin, side, _ = _compiled("gemm_bias.mlir")
    kern = load_kernel(cubin, side)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.float32)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, bias, c, 0.75)
    torch.cuda.synchronize()
    ref = 0.75 * (a.float() @ b.float().T) + bias
    assert not torch.isnan(c).any()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


@pytest.mark.gpu
@requires_gpu
def test_run_command_engine_with_interpreter_reference():
    """`tawac run`'s engine: random data, the tile interpreter as reference."""
    from tawac.runtime.runner import run_kernel_file

    res = run_kernel_file(
        EXAMPLES / "gemm_bias.mlir",
        {"M": 512, "N": 384, "K": 320},
        None,
        lambda p: _compiled(Path(p).name),
        rep_ms=20,
    )
    assert res["ok"] and not res["nan"], res


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("stages", "mma_depth", "persistent"),
    [
        (2, 0, False),
        (2, 1, False),
        (3, 0, False),
        (3, 1, False),
        (3, 2, False),
        (4, 0, False),
        (4, 1, False),
        (3, 0, True),
        (3, 1, True),
        (2, 1, True),
        (3, 2, True),
        (4, 0, True),
        (4, 1, True),
    ],
)
def test_gemm_pipeline_options(stages, mma_depth, persistent):
    """Every ring depth, MMA depth and launch style computes the same product (4 stages
    stage the epilogue through two 64-column chunk buffers, `staging = chunks 2`;
    persistent kernels carry aref iteration numbers across tiles and drain deferred
    releases)."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(
        EXAMPLES / "gemm.mlir", stages=stages, mma_depth=mma_depth, persistent=persistent
    )
    kern = load_kernel(r.cubin, r.sidecar)
    for m, n, k in [(1000, 2000, 3000), (256, 512, 64), (384, 256, 1024), (4096, 4096, 512)]:
        err = _run_abt(kern, m, n, k, torch.bfloat16)
        assert err < 1e-2, (m, n, k, err)


@pytest.mark.gpu
@requires_gpu
def test_kernel_without_a_loop():
    """A dot on single loaded tiles (no K loop): one aref transfer, plain grid."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(Path(__file__).resolve().parent / "data" / "single_k_tile.mlir")
    assert "persistent" not in r.sidecar["grid"][0]
    kern = load_kernel(r.cubin, r.sidecar)
    assert _run_abt(kern, 300, 200, 64, torch.bfloat16) < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("persistent", [True, False])
def test_two_main_loops(persistent):
    """Two K loops (two arefs) in one kernel, chained through the accumulator, f32 out:
    C = 2 A·Bᵀ + B·Aᵀ. Persistent: each CTA runs several tiles, with one carried aref
    base per loop."""
    import torch
    from test_pass_invariants import TWO_LOOPS

    from tawac.driver import compile_module, parse_text
    from tawac.runtime import load_kernel

    r = compile_module(parse_text(TWO_LOOPS, "two_loops.mlir"), cubin=True, persistent=persistent)
    kern = load_kernel(r.cubin, r.sidecar)
    n, k = 2048, 256
    a = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float32)
    kern(a, b, c)
    torch.cuda.synchronize()
    af, bf = a.float(), b.float()
    ref = 2 * af @ bf.T + bf @ af.T
    assert not torch.isnan(c).any()
    assert ((c - ref).norm() / ref.norm()).item() < 1e-3


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("bm", "bn", "bk"),
    [
        (128, 128, 64),
        (64, 256, 64),
        (128, 128, 128),
        (64, 128, 64),
        (128, 64, 64),
        (256, 128, 64),
        (128, 192, 64),
    ],
)
@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_other_tile_configs(bm, bn, bk, dt):
    """Tile shapes other than the examples' (one consumer warp group for 64-row tiles,
    two K chunks for BK=128, N that is not a power of two) compute the same product."""
    import torch
    from test_tile_configs import compile_config

    from tawac.runtime import load_kernel

    r = compile_config(bm, bn, bk, dt, cubin=True)
    kern = load_kernel(r.cubin, r.sidecar)
    dtype = torch.bfloat16 if dt == "bf16" else torch.float16
    for m, n, k in [(1000, 2000, 3000), (129, 257, 65), (2048, 2048, 512)]:
        err = _run_abt(kern, m, n, k, dtype)
        assert err < 1e-2, (m, n, k, err)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("bm", "bn", "stages", "chunks"),
    [(128, 192, 5, 1), (256, 128, 4, 1), (128, 256, 4, 2)],
)
@pytest.mark.parametrize("persistent", [True, False])
def test_chunked_epilogue_staging(bm, bn, stages, chunks, persistent):
    """Rings too deep for a whole staging tile: the epilogue goes out in 64-column chunks
    through `chunks` buffers (one buffer: each chunk waits for the previous one's bulk
    store; an odd number of chunks, 192 columns, forces one), tile after tile."""
    import torch
    from test_tile_configs import compile_config

    from tawac.runtime import load_kernel

    r = compile_config(bm, bn, 64, "bf16", cubin=True, stages=stages, persistent=persistent)
    # the planner's choice is checked in test_tile_configs; here: chunks - 1 stores pending
    waits = {line.strip() for line in r.ptx.splitlines() if "wait_group.read" in line}
    wait = "cp.async.bulk.wait_group.read"
    assert waits == {f"{wait} {chunks - 1};", f"{wait} 0;"}
    kern = load_kernel(r.cubin, r.sidecar)
    for m, n, k in [(1000, 2000, 3000), (129, 257, 65), (2048, 2048, 512)]:
        err = _run_abt(kern, m, n, k, torch.bfloat16)
        assert err < 1e-2, (m, n, k, err)


@pytest.mark.gpu
@requires_gpu
def test_silu_epilogue_with_bf16_bias():
    """A bf16 bias vector converted and broadcast in registers, then exp/neg/div math."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(Path(__file__).resolve().parent / "data" / "gemm_bias_silu.mlir")
    kern = load_kernel(r.cubin, r.sidecar)
    m, n, k = 1000, 1500, 700
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    kern(a, b, bias, c)
    torch.cuda.synchronize()
    ref = torch.nn.functional.silu(a.float() @ b.float().T + bias.float())
    assert not torch.isnan(c).any()
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("sizes", [{"M": 300, "N": 128, "K": 200}, {"M": 512, "N": 384, "K": 64}])
def test_row_softmax_reductions(sizes):
    """tile.reduce max/sum (in-thread + quad shuffles), row-vector broadcasts and exp2,
    against the tile interpreter (softmax per 128-column tile, as the kernel defines)."""
    from tawac.runtime.runner import run_kernel_file

    path = Path(__file__).resolve().parent / "data" / "row_softmax.mlir"

    def compile_fn(p):
        r = compile_file(p)
        return r.cubin, r.sidecar, r.kernel

    res = run_kernel_file(path, sizes, None, compile_fn, rep_ms=5, tol=1e-3)
    assert res["ok"] and not res["nan"], res


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("persistent", [True, False])
def test_chained_gemm_register_a_operand(persistent):
    """O = bf16(A·B[:128]ᵀ)·V[:128]: the second wgmma reads P from registers (register-A
    form) and V arrives once per tile through its own aref."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(
        Path(__file__).resolve().parent / "data" / "chained_gemm.mlir", persistent=persistent
    )
    kern = load_kernel(r.cubin, r.sidecar)
    m, n, k, d = 40000, 200, 300, 128  # 313 row tiles: several per CTA when persistent
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(n, d, device="cuda", dtype=torch.bfloat16)
    o = torch.full((m, d), float("nan"), device="cuda", dtype=torch.float32)
    kern(a, b, v, o)
    torch.cuda.synchronize()
    p = (a.float() @ b[:128].float().T).to(torch.bfloat16).float()
    ref = p @ v[:128].float()
    assert not torch.isnan(o).any()
    assert ((o - ref).norm() / ref.norm()).item() < 5e-3


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    "params",
    [
        {"BLOCK_M": 256, "BLOCK_N": 152},  # 19 column blocks: 4 groups of 4, 3 pairs
        {"BLOCK_M": 128, "BLOCK_N": 24},  # no whole group of four blocks
        {"BLOCK_M": 256, "BLOCK_N": 160},
    ],
    ids=lambda p: f"{p['BLOCK_M']}x{p['BLOCK_N']}",
)
@pytest.mark.parametrize(("m", "n", "k"), [(3000, 5000, 200), (129, 200, 64), (300, 40, 128)])
def test_gemm_tile_widths_not_a_multiple_of_32(params, m, n, k):
    """16-bit stores from a tile whose width is not a multiple of 32 columns: the blocks
    past the groups of four go out as packed pairs (`st.global.b32`), each under the
    column bound (ragged N, a tile wider than N)."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / "gemm.mlir", params=params)
    assert "st.global.b16" not in r.ptx
    err = _run_abt(load_kernel(r.cubin, r.sidecar), m, n, k, torch.bfloat16)
    assert err < 1e-2, f"relative error {err:.3e} for {m}x{n}x{k}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("example", "params"),
    [
        ("gemm.mlir", {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128}),
        ("gemm.mlir", {"BLOCK_M": 32, "BLOCK_N": 128, "BLOCK_K": 64}),
        ("gemm.mlir", {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 128}),
        ("gemm_fp16.mlir", {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}),
    ],
    ids=lambda p: p if isinstance(p, str) else "x".join(str(v) for v in p.values()),
)
@pytest.mark.parametrize(
    ("m", "n", "k"), [(1, 4096, 4096), (16, 200, 136), (33, 4160, 512), (100, 96, 64)]
)
def test_gemm_swap_ab(example, params, m, n, k):
    """swap-AB (the tile computed as C^T = B A^T and stored transposed): decode-sized
    and ragged M, N and K (rows of the token tile past M, a weight tile past N, a last K
    step past K), against the float32 reference."""
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / example, params=params, swap_ab=True)
    assert f"m64n{params['BLOCK_M']}k" in r.ptx
    dtype = torch.float16 if "fp16" in example else torch.bfloat16
    err = _run_abt(load_kernel(r.cubin, r.sidecar), m, n, k, dtype)
    assert err < 1e-2, f"relative error {err:.3e} for {m}x{n}x{k}"
