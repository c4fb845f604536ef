"""Attention forward on the GPU against torch's scaled_dot_product_attention.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DATA = Path(__file__).resolve().parent / "data"
LOG2E = 1.4426950408889634

_cache: dict[tuple, object] = {}

#: The four prefill examples.
PREFILL = [
    "attention.mlir",
    "attention_causal.mlir",
    "attention_d64.mlir",
    "attention_causal_d64.mlir",
]


def _kernel(name: str, **options):
    from tawac.runtime import load_kernel

    key = (name, tuple(sorted(options.items())))
    if key not in _cache:
        r = compile_file(EXAMPLES / name, **options)
        _cache[key] = load_kernel(r.cubin, r.sidecar)
    return _cache[key]


def _check(
    kern, b: int, h: int, s: int, d: int, causal: bool, seed: int, dtype: str = "bfloat16"
) -> None:
    """Random 16-bit inputs, a NaN-poisoned output, compared with SDPA in float32."""
    import torch

    torch.manual_seed(seed)
    dt = getattr(torch, dtype)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dt) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    kern(q, k, v, o, d**-0.5 * LOG2E)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), is_causal=causal
    )
    assert not torch.isnan(o).any()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("b", "h", "s"),
    [(1, 1, 128), (2, 3, 512), (4, 16, 1024), (1, 2, 4096), (2, 2, 1000), (1, 3, 77)],
)
@pytest.mark.parametrize(("persistent", "pingpong"), [(True, False), (False, False), (True, True)])
def test_attention_d128_matches_sdpa(b, h, s, persistent, pingpong):
    kern = _kernel("attention.mlir", persistent=persistent, pingpong=pingpong)
    _check(kern, b, h, s, 128, False, b * 100 + h * 10 + s)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (2, 4, 768), (2, 32, 2048), (3, 2, 333)])
def test_attention_d64_matches_sdpa(b, h, s):
    _check(_kernel("attention_d64.mlir"), b, h, s, 64, False, b * 100 + h * 10 + s)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("b", "h", "s"), [(1, 1, 128), (2, 3, 640), (4, 16, 1024), (1, 2, 4096), (2, 2, 1000)]
)
@pytest.mark.parametrize("persistent", [True, False])
def test_causal_attention_d128_matches_sdpa(b, h, s, persistent):
    kern = _kernel("attention_causal.mlir", persistent=persistent)
    _check(kern, b, h, s, 128, True, b * 100 + h * 10 + s + 7)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (2, 4, 768), (2, 32, 2048), (3, 2, 333)])
def test_causal_attention_d64_matches_sdpa(b, h, s):
    _check(_kernel("attention_causal_d64.mlir"), b, h, s, 64, True, b * 100 + h * 10 + s + 3)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", PREFILL)
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (1, 1, 256), (2, 4, 1000), (1, 8, 2048)])
@pytest.mark.parametrize(
    "options",
    [{}, {"coarse_pipeline": False}, {"tile_prefetch": False}, {"mma_depth": 1}],
    ids=["default", "no-coarse-pipeline", "no-tile-prefetch", "mma-depth-1"],
)
def test_attention_schedules_match_sdpa(name, b, h, s, options):
    """The default schedule (P_{j-1} V_{j-1} deferred under softmax_j, the next tile's Q
    loaded early) and each of those turned off compute the same, from one key block
    (prologue and epilogue only) to many."""
    kern = _kernel(name, **options)
    d = 64 if "d64" in name else 128
    _check(kern, b, h, s, d, "causal" in name, b + h + s)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("name", PREFILL)
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (4, 16, 1000), (3, 40, 512)])
@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "no-prefetch"])
def test_attention_overlap_epilogue_matches_sdpa(name, b, h, s, prefetch):
    """`overlap_epilogue`: each tile's epilogue runs under the next tile's first MMA,
    the last one after the tile loop; from one tile on the GPU (the other CTAs have
    none) to several tiles per CTA (480 and 512 tiles on 132 SMs), ragged lengths, with
    and without a second slot for Q."""
    kern = _kernel(name, overlap_epilogue=True, tile_prefetch=prefetch)
    d = 64 if "d64" in name else 128
    _check(kern, b, h, s, d, "causal" in name, b + h + s + 11)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    "name", ["attention_causal_d64_bn64.mlir", "attention_causal_d64_m192.mlir"]
)
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 64), (2, 3, 640), (1, 4, 1000), (2, 2, 2048)])
def test_causal_attention_block_shapes_match_sdpa(name, b, h, s):
    """Other block shapes of the same program through the same passes: 64-key blocks
    (two masked blocks per diagonal) and 192-query blocks (three consumer warp groups,
    query blocks straddling key blocks)."""
    from tawac.runtime import load_kernel

    r = compile_file(DATA / name)
    _check(load_kernel(r.cubin, r.sidecar), b, h, s, 64, True, b * 7 + h + s)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("b", "h", "s"), [(1, 1, 128), (2, 3, 1000), (1, 4, 2048)])
def test_fp16_attention_matches_sdpa(b, h, s):
    """The d128 program with fp16 tensors and an fp16 P through the same passes."""
    from tawac.runtime import load_kernel

    r = compile_file(DATA / "attention_fp16.mlir")
    _check(load_kernel(r.cubin, r.sidecar), b, h, s, 128, False, b + h + s, "float16")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("name", "d", "params"),
    [
        ("attention.mlir", 128, {"BLOCK_N": 160}),
        ("attention.mlir", 128, {"BLOCK_N": 64}),
        ("attention.mlir", 128, {"BLOCK_M": 64, "BLOCK_N": 192}),
        ("attention_d64.mlir", 64, {"BLOCK_M": 128, "BLOCK_N": 128}),
        ("attention_d64.mlir", 64, {"BLOCK_N": 192}),
    ],
)
@pytest.mark.parametrize(("b", "h", "s"), [(1, 2, 1000), (2, 2, 2048), (1, 1, 77)])
def test_attention_parameters_match_sdpa(name, d, params, b, h, s):
    """The attention examples at other block sizes (kernel parameters): ragged and
    whole key blocks."""
    from tawac.runtime import load_kernel

    key = (name, "params", tuple(sorted(params.items())))
    if key not in _cache:
        r = compile_file(EXAMPLES / name, params=params)
        _cache[key] = load_kernel(r.cubin, r.sidecar)
    _check(_cache[key], b, h, s, d, False, b * 100 + h * 10 + s)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("every", [1, 2, 4])
@pytest.mark.parametrize(
    ("name", "d", "causal"),
    [("attention_d64.mlir", 64, False), ("attention_causal.mlir", 128, True)],
)
def test_attention_with_exp2_on_the_fma_pipe_matches_sdpa(every, name, d, causal):
    """`exp2_fma`: every N-th exponential of the softmax by the cubic (N = 1: all)."""
    kern = _kernel(name, exp2_fma=every)
    _check(kern, 2, 4, 1000, d, causal, every)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("name", "d", "causal", "s"),
    [
        ("attention.mlir", 128, False, 4096),
        ("attention_d64.mlir", 64, False, 1000),
        ("attention_causal.mlir", 128, True, 2048),
        ("attention_causal_d64.mlir", 64, True, 333),
    ],
)
def test_skip_rescale_gives_the_same_bits(name, d, causal, s):
    """`skip_rescale`: a warp whose row maxima did not grow leaves O as it is (x * 1 is
    x), so the output has the bits of the default build's; and it is right."""
    import torch

    torch.manual_seed(s)
    q, k, v = (torch.randn(2, 4, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    outs = []
    for skip in (False, True):
        o = torch.full_like(q, float("nan"))
        _kernel(name, skip_rescale=skip)(q, k, v, o, d**-0.5 * LOG2E)
        torch.cuda.synchronize()
        outs.append(o)
    assert torch.equal(outs[0], outs[1])
    _check(_kernel(name, skip_rescale=True), 2, 4, s, d, causal, s)
