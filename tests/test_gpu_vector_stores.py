"""Register stores as whole vectors (`_store_pairs`, `_store_quads` in
tawac/backend_ptx/lowering/tiles.py) on the GPU: f32 tiles as 8-byte pairs and 16-bit
tiles as 16-byte vectors after a quad transpose, at ragged sizes, into tensors the
launcher can take in place and into views it must copy (a destination whose rows are
not 16-byte pieces: the pointer's "align", docs/abi.md): the columns past the view are
never written.

Marked `gpu`; skipped where no Hopper GPU is present.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_util import requires_gpu

from tawac.driver import compile_file

DATA = Path(__file__).resolve().parent / "data"
FILECHECK = Path(__file__).resolve().parent / "filecheck" / "passes"


def _run(path: Path, m: int, n: int, k: int, out_dtype, pad: int, bounded: bool):
    import torch

    from tawac.runtime import load_kernel

    r = compile_file(path)
    assert "0 bytes spill stores" in r.ptxas_report, r.ptxas_report
    pointer = [p for p in r.sidecar["params"] if p["kind"] == "pointer" and p["arg"] == "c"]
    assert pointer and pointer[0].get("align") == 16, r.sidecar["params"]
    kern = load_kernel(r.cubin, r.sidecar)
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    full = torch.full((m, n + pad), float("nan"), device="cuda", dtype=out_dtype)
    c = full[:, :n]
    end = m - 37 if bounded else m
    if bounded:
        kern(a, b, c, end)
    else:
        kern(a, b, c)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    got = c[:end].float()
    assert not got.isnan().any()
    assert ((got - ref[:end]).norm() / ref[:end].norm()).item() < 1e-2
    assert full[end:, :n].isnan().all()  # rows past the bound: not written
    if pad:
        assert full[:, n:].isnan().all()  # columns past the view: not written


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k", "pad"), [(1000, 700, 320, 0), (300, 260, 200, 3)])
def test_f32_tiles_as_pairs(m, n, k, pad):
    import torch

    _run(DATA / "variants" / "swapped_axes_f32_out.mlir", m, n, k, torch.float32, pad, False)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k", "pad"), [(640, 512, 256, 0), (333, 328, 128, 5)])
def test_16bit_tiles_as_quad_vectors_under_a_row_bound(m, n, k, pad):
    import torch

    path = FILECHECK / "convert-to-ptx-quad-store.mlir"
    _run(path, m, n, k, torch.bfloat16, pad, True)
