"""Decode attention on the GPU (`examples/attention_decode.mlir`): grouped query heads
(`group-heads`) and split keys (`--split-k S`, flash-decoding) against a float32
reference at ragged sizes: keys not a multiple of the key block or of the split, one
query row, splits with no key, query rows spanning several stacked blocks; repeated
launches give the same bits (the partials are combined in split order) and the tickets
reset themselves.

Each output is poisoned (NaN) first. Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "attention_decode.mlir"


@functools.cache
def _kernel(splits: int, group: int, grouped: bool = True, block_m: int = 64):
    from tawac.runtime import load_kernel

    params = {"GROUP": group, "BLOCK_M": block_m}
    r = compile_file(EXAMPLE, params=params, split_k=splits, group_heads=grouped)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    return load_kernel(r.cubin, r.sidecar)


def _case(b: int, h: int, hk: int, rows: int, keys: int, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, h, rows, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, hk, keys, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, hk, keys, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.full_like(q, float("nan"))
    return q, k, v, o


def _error(q, k, v, o) -> float:
    groups = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(groups, 1)
    vv = v.float().repeat_interleave(groups, 1)
    p = torch_softmax(q.float() @ kk.transpose(-1, -2) / math.sqrt(128))
    return (o.float() - p @ vv).abs().max().item()


def torch_softmax(x):
    import torch

    return torch.softmax(x, dim=-1)


def _run(kern, q, k, v, o) -> None:
    import torch

    kern(q, k, v, o, math.log2(math.e) / math.sqrt(128))
    torch.cuda.synchronize()


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", [1, 3, 8, 20])  # 20: two levels of combine, 3 groups
@pytest.mark.parametrize(
    ("b", "h", "hk", "rows", "keys"),
    [
        (2, 32, 4, 1, 8192),  # one query row per head, 8 heads per K/V head
        (1, 16, 2, 4, 1000),  # keys ragged: 7 blocks of 128 and a part, chunks uneven
        (3, 8, 1, 16, 300),  # 16 rows: two stacked blocks of 8 rows per head
        (1, 8, 1, 5, 129),  # 2 key blocks: most of 3 or 8 splits run no key
    ],
)
def test_decode_matches_the_reference(splits, b, h, hk, rows, keys):
    kern = _kernel(splits, h // hk)
    q, k, v, o = _case(b, h, hk, rows, keys, splits * 100 + rows)
    _run(kern, q, k, v, o)
    assert _error(q, k, v, o) < 2e-2


@pytest.mark.gpu
@requires_gpu
def test_decode_without_grouping_matches_the_reference():
    """`--no-group-heads`: one program per query head (each reads its K/V head)."""
    kern = _kernel(4, 4, grouped=False)
    q, k, v, o = _case(2, 8, 2, 3, 777, 7)
    _run(kern, q, k, v, o)
    assert _error(q, k, v, o) < 2e-2


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", [8, 32])  # one level of combine; two (4 groups of 8)
def test_split_keys_are_deterministic_and_tickets_reset(splits):
    import torch

    kern = _kernel(splits, 8)
    q, k, v, o = _case(4, 32, 4, 1, 20000, 3)
    _run(kern, q, k, v, o)
    first = o.clone()
    assert _error(q, k, v, o) < 2e-2
    for _ in range(10):
        o.fill_(float("nan"))
        _run(kern, q, k, v, o)
        assert torch.equal(o, first)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize(("rows", "keys"), [(16, 1000), (5, 4097), (33, 300)])
def test_decode_with_128_row_tiles(splits, rows, keys):
    """BLOCK_M = 128: two consumer warp groups, each storing its half of the stacked
    tile (4 of the 8 heads, 16 rows each)."""
    kern = _kernel(splits, 8, block_m=128)
    q, k, v, o = _case(2, 16, 2, rows, keys, rows + splits)
    _run(kern, q, k, v, o)
    assert _error(q, k, v, o) < 2e-2


@pytest.mark.gpu
@requires_gpu
def test_decode_refuses_another_ratio_of_heads():
    from tawac.runtime.arguments import LaunchError

    kern = _kernel(1, 8)
    q, k, v, o = _case(1, 32, 2, 1, 256, 0)  # 16 query heads per K/V head, not 8
    with pytest.raises(LaunchError, match="needs 8 times as many"):
        _run(kern, q, k, v, o)
    assert o.isnan().all()  # nothing was launched


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(
    ("hk", "rows", "keys"), [(4, 1, 5000), (8, 16, 20000), (4, 3, 131072), (4, 1, 30000)]
)
def test_decode_through_tawac_torch_with_the_shipped_table(hk, rows, keys):
    """`tawac.torch` picks the configuration of the call's sizes from
    examples/attention_decode.tune.json: the group size (a parameter) and the split."""
    import tawac.torch

    kern = tawac.torch.kernel(EXAMPLE)
    q, k, v, o = _case(1, 32, hk, rows, keys, hk + rows)
    _run(kern, q, k, v, o)
    assert _error(q, k, v, o) < 2e-2


PAGED = Path(__file__).resolve().parent.parent / "examples" / "attention_paged.mlir"


@functools.cache
def _paged_kernel(splits: int, group: int):
    from tawac.runtime import load_kernel

    r = compile_file(PAGED, params={"GROUP": group}, split_k=splits)
    assert "0 bytes spill stores, 0 bytes spill loads" in r.ptxas_report, r.ptxas_report
    return load_kernel(r.cubin, r.sidecar)


def paged_case(lens: list[int], h: int, hk: int, rows: int, seed: int, page: int = 128):
    """A paged KV cache: each sequence's pages drawn at random from a shared pool (more
    pages than needed), its table padded with -1; and the same keys and values laid out
    contiguously per sequence, for the reference."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    need = [-(-n // page) for n in lens]
    pool = sum(need) + 3
    kc = torch.randn(pool, hk, page, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(pool, hk, page, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    order = torch.randperm(pool, generator=g, device="cuda").to(torch.int32)
    table = torch.full((len(lens), max(need + [1])), -1, device="cuda", dtype=torch.int32)
    at = 0
    for b, n in enumerate(need):
        table[b, :n] = order[at : at + n]
        at += n
    q = torch.randn(len(lens), h, rows, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.full_like(q, float("nan"))
    seq_lens = torch.tensor(lens, device="cuda", dtype=torch.int32)
    return q, kc, vc, table, seq_lens, o


def paged_error(q, kc, vc, table, lens, o) -> float:
    worst = 0.0
    for b, n in enumerate(lens.tolist()):
        pages = table[b, : -(-n // kc.shape[2])].long()
        k = kc[pages].permute(1, 0, 2, 3).reshape(kc.shape[1], -1, 128)[:, :n][None]
        v = vc[pages].permute(1, 0, 2, 3).reshape(vc.shape[1], -1, 128)[:, :n][None]
        worst = max(worst, _error(q[b : b + 1], k, v, o[b : b + 1]))
    return worst


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize(
    ("lens", "rows"),
    [
        ([1000, 5, 2048, 129], 1),  # ragged: a part page, one key, whole pages
        ([300, 7000], 4),  # uneven lengths: most splits of the short one run no page
        ([128], 16),
    ],
)
def test_paged_decode_matches_the_reference(splits, lens, rows):
    kern = _paged_kernel(splits, 8)
    q, kc, vc, table, seq_lens, o = paged_case(lens, 16, 2, rows, splits + rows)
    kern(q, kc, vc, table, seq_lens, o, math.log2(math.e) / math.sqrt(128))
    import torch

    torch.cuda.synchronize()
    assert paged_error(q, kc, vc, table, seq_lens, o) < 2e-2


@pytest.mark.gpu
@requires_gpu
def test_paged_decode_refuses_another_page_size():
    from tawac.runtime.arguments import LaunchError

    kern = _paged_kernel(1, 8)
    q, kc, vc, table, seq_lens, o = paged_case([100], 16, 2, 1, 0, page=64)
    with pytest.raises(LaunchError, match=r"kc.shape\[2\] \(PAGE\) is 64: the kernel needs 128"):
        kern(q, kc, vc, table, seq_lens, o, 0.1)
