"""Non-causal attention in 2-CTA clusters on the GPU: examples/attention.mlir
(d128, 128-query blocks) and attention_d64.mlir (d64, 192-query blocks, three consumer
warp groups) with `cluster=2x1`: the CTAs of query blocks 2i and 2i+1 of one head share
K and V (each loads a band of rows of each tile and multicasts it), Q is private.
Persistent and not, odd numbers of query blocks (the second CTA of the last pair
computes a block entirely past the sequence: zeros of Q, clipped stores) and ragged
sequences, schedule variants (no coarse pipeline, no tile prefetch, ping-pong). Random
inputs, a NaN-poisoned output with a NaN guard row after each head's sequence (an
out-of-range store would write it), compared with float32 SDPA and with the kernel
without a cluster.

The hang guard is tests/test_gpu_cluster.py's: each configuration first runs in a child
process under a time limit, and every test here fails at once when one hangs.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from gpu_util import requires_gpu
from test_gpu_cluster import smoke_failures

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LOG2E = 1.4426950408889634
TOL = 1e-2
NAMES = ["attention.mlir", "attention_d64.mlir"]
VARIANTS = [
    {"persistent": True},
    {"persistent": False},
    {"coarse_pipeline": False},
    {"tile_prefetch": False},
    {"pingpong": True},
]
VARIANT_IDS = ["persistent", "plain", "no-coarse-pipeline", "no-tile-prefetch", "pingpong"]

# (batch, heads, sequence): query blocks of 128 (d128) / 192 (d64): 1/1, 3/2, 4/3,
# 8/6, 7/5, 1/1; ragged but for 128; (2, 16, 891) gives a persistent cluster several
# tiles.
SIZES = [(1, 1, 128), (2, 3, 273), (1, 2, 401), (1, 4, 1000), (2, 16, 891), (3, 2, 77)]


@cache
def _kernel(name: str, cluster: str = "2x1", **options):
    from tawac.runtime import load_kernel

    r = compile_file(EXAMPLES / name, cluster=cluster, **options)
    assert r.sidecar["cluster"] == ([2, 1, 1] if cluster == "2x1" else [1, 1, 1])
    return load_kernel(r.cubin, r.sidecar)


@pytest.fixture(scope="module", autouse=True)
def _attention_clusters_terminate():
    """Each configuration tested here, in a child process per example under a time
    limit."""
    from gpu_util import gpu_available

    if not gpu_available():
        yield
        return
    failures = []
    for name in NAMES:
        configs = [{"cluster": "2x1", **v} for v in VARIANTS]
        failures += smoke_failures("attention", name, configs)
    if failures:
        pytest.fail("attention cluster kernels did not run:\n" + "\n".join(failures))
    yield


def _inputs(b: int, h: int, s: int, d: int, seed: int):
    """q, k, v and a NaN output o: a view of a buffer with one more (guard) row per
    head, NaN as well."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (
        torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3)
    )
    big = torch.full((b, h, s + 1, d), float("nan"), device="cuda", dtype=torch.bfloat16)
    return q, k, v, big, big[:, :, :s, :]


def _run(kern, q, k, v, o) -> None:
    import torch

    d = q.shape[-1]
    kern(q, k, v, o, d**-0.5 * LOG2E)
    torch.cuda.synchronize()


def _check(big, o, q, k, v) -> float:
    import torch

    assert not torch.isnan(o).any(), "unwritten (poisoned) output elements remain"
    assert torch.isnan(big[:, :, -1, :]).all(), "a row past the sequence was written"
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    return ((o.float() - ref).norm() / ref.norm()).item()


def _cluster_error(name: str, options: dict, b: int, h: int, s: int, seed: int) -> float:
    """The relative error of the 2x1-cluster kernel of `name` (with `options`) against
    float32 SDPA, on poisoned, guarded inputs of (b, h, s)."""
    kern = _kernel(name, **options)
    d = 64 if "d64" in name else 128
    q, k, v, big, o = _inputs(b, h, s, d, seed)
    _run(kern, q, k, v, o)
    return _check(big, o, q, k, v)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize(("b", "h", "s"), SIZES)
def test_attention_in_clusters(name, persistent, b, h, s):
    err = _cluster_error(name, {"persistent": persistent}, b, h, s, b * 100 + h * 10 + s)
    assert err < TOL, f"{name} persistent={persistent} {b}x{h}x{s}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", VARIANTS[2:], ids=VARIANT_IDS[2:])
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (2, 3, 273), (2, 16, 891)])
def test_attention_cluster_schedules(name, options, b, h, s):
    """The coarse pipeline off (K and V released in their own iteration), Q without a
    second slot, ping-pong turns: the same protocol across the pair."""
    err = _cluster_error(name, options, b, h, s, b + h + s)
    assert err < TOL, f"{name} {options} {b}x{h}x{s}: {err:.3e}"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("persistent", [True, False])
def test_attention_cluster_matches_no_cluster(name, persistent):
    """The cluster changes where K and V come from, not the arithmetic: the output is
    the unclustered kernel's (up to a rounding of the last bit, should ptxas contract
    differently)."""
    import torch

    d = 64 if "d64" in name else 128
    q, k, v, big, o = _inputs(2, 8, 1000, d, 5)
    _run(_kernel(name, persistent=persistent), q, k, v, o)
    plain = torch.full_like(o, float("nan"))
    _run(_kernel(name, cluster="1x1", persistent=persistent), q, k, v, plain)
    diff = ((o.float() - plain.float()).norm() / plain.float().norm()).item()
    assert diff < 1e-3, f"{name} persistent={persistent}: {diff:.3e} from no cluster"


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", NAMES)
def test_attention_cluster_repeated_launches(name):
    """One persistent cluster kernel back to back on other shapes (the slots' phases
    restart at every launch)."""
    kern = _kernel(name, persistent=True)
    d = 64 if "d64" in name else 128
    for b, h, s in ((1, 2, 401), (4, 16, 1024), (1, 2, 401), (3, 5, 273)):
        q, k, v, big, o = _inputs(b, h, s, d, s)
        _run(kern, q, k, v, o)
        err = _check(big, o, q, k, v)
        assert err < TOL, f"{name} {b}x{h}x{s}: {err:.3e}"
