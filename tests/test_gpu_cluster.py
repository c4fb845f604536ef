"""2-CTA thread block clusters with TMA multicast on the GPU: every GEMM
example with `cluster=2x1` and `1x2`, persistent and not, on ragged sizes with odd
numbers of tiles along the paired axis (a cluster whose second CTA computes a tile that
is entirely out of range), a 4096^3 product and release lag 1; the fp8 GEMM in both fp8
formats and the residual GEMM (D = alpha A B^T + beta C, C private to each CTA). Random
inputs, a NaN-poisoned output inside a NaN guard band (clipped stores of the
out-of-range CTAs must not write it), compared with a float32 reference.

A wrong barrier count or phase hangs rather than fails, and a hung kernel cannot be
interrupted in-process: the module first runs small launches of each configuration in
child processes under a time limit (`smoke_failures`, one child per example), and every
test here fails at once (naming the configuration) when a child hangs or crashes.
Attention in clusters: tests/test_gpu_cluster_attention.py.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file, compile_source

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
CONFIGS = [(c, p) for c in ("2x1", "1x2") for p in (True, False)]
TOL = 1e-2
FP8_TOL = 2e-2
HANG_LIMIT_S = 240

# Sizes with odd numbers of tiles along M and N (128x256 tiles: 3x3, 4x5, 1x1 tiles).
SIZES_256 = [(261, 520, 200), (389, 1280, 320), (100, 100, 64)]
# gemm_bias.mlir has 128x128 tiles: 3x3, 4x5, 1x1.
SIZES_128 = [(261, 264, 200), (389, 640, 320), (100, 100, 64)]
# fp8: K a multiple of 16 (TMA's 16-byte stride rule for 1-byte elements); 3x3, 4x5, 1x1.
SIZES_FP8 = [(261, 520, 208), (389, 1280, 320), (100, 100, 64)]


@cache
def _kernel(name: str, cluster: str, persistent: bool, **options):
    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / name, cluster=cluster, persistent=persistent, **options)
    assert r.sidecar["cluster"] != [1, 1, 1]
    return load_kernel(r.cubin, r.sidecar)


# One child process per example: each configuration (compile options as JSON) is
# compiled and launched on a few shapes; a line "done <n>" after each, so that the
# parent can name the configuration that hung.
_SMOKE = textwrap.dedent(
    """
    import json, sys, torch
    from tawac.driver import compile_file
    from tawac.runtime import load_kernel
    kind, path, configs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    dev = "cuda"

    def gemm(k, m, n, kk):
        a = torch.randn(m, kk, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, kk, device=dev, dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        k(a, b, c)
        return c, a.float() @ b.float().T

    def fp8(k, m, n, kk):
        a = torch.randn(m, kk, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, kk, device=dev).to(torch.float8_e4m3fn)
        c = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        k(a, b, c, 0.5, 1.75)
        return c, (a.float() @ b.float().T) * 0.875

    def residual(k, m, n, kk):
        a = torch.randn(m, kk, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, kk, device=dev, dtype=torch.bfloat16)
        c = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
        d = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)
        k(a, b, c, d, 0.75, -1.5)
        return d, 0.75 * (a.float() @ b.float().T) - 1.5 * c.float()

    def attention(k, b, h, s):
        dim = 64 if "d64" in path else 128
        q, kk, v = (torch.randn(b, h, s, dim, device=dev, dtype=torch.bfloat16) for _ in "qkv")
        o = torch.full_like(q, float("nan"))
        k(q, kk, v, o, dim**-0.5 * 1.4426950408889634)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return o, sdpa(q.float(), kk.float(), v.float())

    run = {"gemm": gemm, "fp8": fp8, "residual": residual, "attention": attention}[kind]
    shapes = {
        "gemm": ((261, 520, 200), (1024, 1024, 512)),
        "fp8": ((261, 520, 208), (1024, 1024, 512)),
        "residual": ((261, 520, 200), (1024, 1024, 512)),
        "attention": ((1, 1, 128), (1, 2, 273), (2, 16, 891)),
    }[kind]
    for n, options in enumerate(configs):
        r = compile_file(path, **options)
        k = load_kernel(r.cubin, r.sidecar)
        for shape in shapes:
            out, ref = run(k, *shape)
            torch.cuda.synchronize()
            err = ((out.float() - ref).norm() / ref.norm()).item()
            print(options, shape, err, flush=True)
        print("done", n, flush=True)
    """
)


def smoke_failures(kind: str, name: str, configs: list[dict]) -> list[str]:
    """Runs each configuration of example `name` (compile options) once in a child
    process under HANG_LIMIT_S; what went wrong, naming the configuration."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _SMOKE, kind, str(EXAMPLES / name), json.dumps(configs)],
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT_S,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout
        return [
            f"{name} {_pending(out, configs)}: no answer in {HANG_LIMIT_S} s (a hang: "
            "barrier protocol)"
        ]
    if proc.returncode != 0:
        what = _pending(proc.stdout, configs)
        return [f"{name} {what}: exit {proc.returncode}: {proc.stderr[-2000:]}"]
    return []


def _pending(out: str | None, configs: list[dict]) -> dict:
    """The first configuration the child did not finish."""
    done = sum(line.startswith("done ") for line in (out or "").splitlines())
    return configs[min(done, len(configs) - 1)]


def _configs(**extra) -> list[dict]:
    return [{"cluster": c, "persistent": p, **extra} for c, p in CONFIGS]


@pytest.fixture(scope="module", autouse=True)
def _cluster_kernels_terminate():
    """Each configuration of the GEMM examples tested here (release lag 1 too), in child
    processes under a time limit."""
    from gpu_util import gpu_available

    if not gpu_available():
        yield
        return
    failures = []
    failures += smoke_failures("gemm", "gemm.mlir", _configs() + _configs(mma_depth=1))
    failures += smoke_failures("fp8", "gemm_fp8.mlir", _configs())
    failures += smoke_failures("residual", "gemm_residual.mlir", _configs())
    if failures:
        pytest.fail("cluster kernels did not run:\n" + "\n".join(failures))
    yield


def _poisoned(m: int, n: int, dtype):
    """A NaN (m, n) output inside a NaN guard band: one more row and 8 more columns (the
    row stride stays a multiple of 16 bytes)."""
    import torch

    cols = -(-n // 8) * 8 + 8
    big = torch.full((m + 1, cols), float("nan"), device="cuda", dtype=dtype)
    return big, big[:m, :n]


def _check(big, c, ref) -> float:
    import torch

    m, n = c.shape
    assert not torch.isnan(c).any(), "unwritten (poisoned) output elements remain"
    guard = torch.ones_like(big, dtype=torch.bool)
    guard[:m, :n] = False
    assert torch.isnan(big[guard]).all(), "elements outside the output were written"
    return ((c.float() - ref).norm() / ref.norm()).item()


def _run_gemm(kern, m, n, k, dtype, b_kxn=False, seed=0) -> float:
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed + m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=g)
    shape = (k, n) if b_kxn else (n, k)
    b = torch.randn(*shape, device="cuda", dtype=dtype, generator=g)
    big, c = _poisoned(m, n, dtype)
    kern(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ (b.float() if b_kxn else b.float().T)
    return _check(big, c, ref)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
@pytest.mark.parametrize(
    ("name", "dtype_name", "b_kxn"),
    [
        ("gemm.mlir", "bfloat16", False),
        ("gemm_fp16.mlir", "float16", False),
        ("gemm_nn.mlir", "bfloat16", True),
    ],
)
@pytest.mark.parametrize(("m", "n", "k"), SIZES_256)
def test_gemm_examples_in_clusters(name, dtype_name, b_kxn, cluster, persistent, m, n, k):
    import torch

    kern = _kernel(name, cluster, persistent)
    err = _run_gemm(kern, m, n, k, getattr(torch, dtype_name), b_kxn)
    assert err < TOL, f"{name} {cluster} persistent={persistent} {m}x{n}x{k}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
@pytest.mark.parametrize(("m", "n", "k"), SIZES_128)
def test_gemm_bias_in_clusters(cluster, persistent, m, n, k):
    import torch

    kern = _kernel("gemm_bias.mlir", cluster, persistent)
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    bias = torch.randn(n, device="cuda", dtype=torch.float32, generator=g)
    alpha = 0.75
    big, c = _poisoned(m, n, torch.bfloat16)
    kern(a, b, bias, c, alpha)
    torch.cuda.synchronize()
    ref = alpha * (a.float() @ b.float().T) + bias[None, :]
    err = _check(big, c, ref)
    assert err < TOL, f"gemm_bias {cluster} persistent={persistent} {m}x{n}x{k}: {err:.3e}"


@cache
def _fp8_kernel(fmt: str, cluster: str, persistent: bool):
    """examples/gemm_fp8.mlir (e4m3 x e4m3) or its e5m2 x e5m2 form (tests/test_fp8.py)."""
    from test_fp8 import FP8, fp8_gemm_text

    from tawac.runtime import load_kernel

    options = {"cluster": cluster, "persistent": persistent}
    if fmt == "e4m3":
        r = compile_file(EXAMPLES / "gemm_fp8.mlir", **options)
    else:
        text = fp8_gemm_text(FP8[fmt], FP8[fmt])
        r = compile_source(text, f"gemm_fp8_{fmt}.mlir", **options)
    assert r.sidecar["cluster"] != [1, 1, 1]
    return load_kernel(r.cubin, r.sidecar)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize(("m", "n", "k"), SIZES_FP8)
def test_gemm_fp8_in_clusters(fmt, cluster, persistent, m, n, k):
    """C = (A B^T) * scale_a * scale_b with fp8 A and B (128x128 fp8 tiles of A, 256x128
    of B: bands of 128 or 64 rows of 128 bytes), against the float32 product of the
    dequantised inputs (TF32 off), as in tests/test_gpu_fp8.py."""
    import torch

    kern = _fp8_kernel(fmt, cluster, persistent)
    dt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    g = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    finite = torch.finfo(dt).max
    a = torch.randn(m, k, device="cuda", generator=g).clamp(-finite, finite).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).clamp(-finite, finite).to(dt)
    sa, sb = 0.5, 1.75
    big, c = _poisoned(m, n, torch.bfloat16)
    kern(a, b, c, sa, sb)
    torch.cuda.synchronize()
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = (a.float() @ b.float().T) * (sa * sb)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    err = _check(big, c, ref)
    assert err < FP8_TOL, f"fp8 {fmt} {cluster} persistent={persistent} {m}x{n}x{k}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
@pytest.mark.parametrize(("m", "n", "k"), [*SIZES_256, (2053, 4104, 128)])
def test_gemm_residual_in_clusters(cluster, persistent, m, n, k):
    """D = alpha A B^T + beta C: A or B multicast, C (an aref written once per tile)
    loaded by each CTA for itself; the out-of-range CTA reads zeros of C too; 17 x 17
    tiles give a persistent cluster several tiles (C's slot refilled, phases flipping)."""
    import torch

    kern = _kernel("gemm_residual.mlir", cluster, persistent)
    g = torch.Generator(device="cuda").manual_seed(m + 3 * n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    alpha, beta = 0.75, -1.5
    big, d = _poisoned(m, n, torch.bfloat16)
    kern(a, b, c, d, alpha, beta)
    torch.cuda.synchronize()
    ref = alpha * (a.float() @ b.float().T) + beta * c.float()
    err = _check(big, d, ref)
    assert err < TOL, f"gemm_residual {cluster} persistent={persistent} {m}x{n}x{k}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_gemm_4096_cubed(cluster, persistent):
    import torch

    kern = _kernel("gemm.mlir", cluster, persistent)
    err = _run_gemm(kern, 4096, 4096, 4096, torch.bfloat16)
    assert err < TOL, f"4096^3 {cluster} persistent={persistent}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_many_tiles_per_cluster_odd_counts(cluster, persistent):
    """33 x 17 tiles: the persistent loop gives each cluster several tiles, the last
    cluster tile along either axis has an out-of-range CTA."""
    import torch

    kern = _kernel("gemm.mlir", cluster, persistent)
    err = _run_gemm(kern, 4101, 4104, 1000, torch.bfloat16)
    assert err < TOL, f"4101x4104x1000 {cluster} persistent={persistent}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("cluster", "persistent"), CONFIGS)
def test_release_lag_in_clusters(cluster, persistent):
    """mma-depth 1: releases deferred by one iteration (and, persistent, the last ones
    drained after each tile's loop) arrive on both CTAs' empty barriers."""
    import torch

    kern = _kernel("gemm.mlir", cluster, persistent, mma_depth=1)
    for m, n, k in ((1000, 2000, 3000), (261, 520, 200)):
        err = _run_gemm(kern, m, n, k, torch.bfloat16)
        assert err < TOL, f"mma-depth 1 {cluster} persistent={persistent} {m}x{n}x{k}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
def test_cluster_kernel_repeated_launches():
    """The same cluster kernel back to back, with other shapes in between (parameter
    reuse and shape plans on the cuLaunchKernelEx path)."""
    import torch

    kern = _kernel("gemm.mlir", "2x1", True)
    for m, n, k in ((512, 512, 256), (261, 520, 200), (512, 512, 256), (2048, 1024, 512)):
        err = _run_gemm(kern, m, n, k, torch.bfloat16, seed=1)
        assert err < TOL, f"{m}x{n}x{k}: {err:.3e}"
