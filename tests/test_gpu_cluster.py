"""2-CTA thread block clusters with TMA multicast (issue 11) on the GPU: every GEMM
example with `cluster=2x1` and `1x2`, persistent and not, on ragged sizes with odd
numbers of tiles along the paired axis (a cluster whose second CTA computes a tile that
is entirely out of range), a 4096^3 product and release lag 1. Random inputs, a
NaN-poisoned output inside a NaN guard band (clipped stores of the out-of-range CTAs
must not write it), compared with a float32 reference.

A wrong barrier count or phase hangs rather than fails, and a hung kernel cannot be
interrupted in-process: the module first runs one small launch of each configuration in
a child process under a time limit, and every test here fails at once (naming the
configuration) when that child hangs or crashes.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
CONFIGS = [(c, p) for c in ("2x1", "1x2") for p in (True, False)]
TOL = 1e-2
HANG_LIMIT_S = 240

# Sizes with odd numbers of tiles along M and N (128x256 tiles: 3x3, 4x5, 1x1 tiles).
SIZES_256 = [(261, 520, 200), (389, 1280, 320), (100, 100, 64)]
# gemm_bias.mlir has 128x128 tiles: 3x3, 4x5, 1x1.
SIZES_128 = [(261, 264, 200), (389, 640, 320), (100, 100, 64)]


@cache
def _kernel(name: str, cluster: str, persistent: bool, **options):
    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / name, cluster=cluster, persistent=persistent, **options)
    assert r.sidecar["cluster"] != [1, 1, 1]
    return load_kernel(r.cubin, r.sidecar)


_SMOKE = textwrap.dedent(
    """
    import sys, torch
    from tawac.driver import compile_file
    from tawac.runtime import load_kernel
    name, cluster, persistent = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    r = compile_file(name, cluster=cluster, persistent=persistent)
    k = load_kernel(r.cubin, r.sidecar)
    for m, n, kk in ((261, 520, 200), (1024, 1024, 512)):
        a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, kk, device="cuda", dtype=torch.bfloat16)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        k(a, b, c)
        torch.cuda.synchronize()
        ref = a.float() @ b.float().T
        err = ((c.float() - ref).norm() / ref.norm()).item()
        print(m, n, kk, err, flush=True)
    """
)


@pytest.fixture(scope="module", autouse=True)
def _cluster_kernels_terminate():
    """Each configuration of gemm.mlir, once, in a child process under a time limit."""
    from gpu_util import gpu_available

    if not gpu_available():
        yield
        return
    failures = []
    for cluster, persistent in CONFIGS:
        what = f"gemm.mlir cluster={cluster} persistent={persistent}"
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _SMOKE, str(EXAMPLES / "gemm.mlir"), cluster]
                + ["1" if persistent else "0"],
                capture_output=True,
                text=True,
                timeout=HANG_LIMIT_S,
                cwd=REPO,
            )
        except subprocess.TimeoutExpired:
            failures.append(f"{what}: no answer in {HANG_LIMIT_S} s (a hang: barrier protocol)")
            continue
        if proc.returncode != 0:
            failures.append(f"{what}: exit {proc.returncode}: {proc.stderr[-2000:]}")
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
