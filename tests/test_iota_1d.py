"""Index vectors: `tile.iota 0, %origin : tensor<Nxi32>` holds origin + i at i.  In a
kernel of 1-d tiles it takes the `BlockedLayout` of the values its mask selects (register
i of a thread: origin + thread_start + reg_offset(i)); tied to a 2-d tile, the row or
column slice of its accumulator layout.  `masked_scale_1d` is where(o + i < n, x * s, 0)
of a 1-d tile, `masked_rows_cols` masks a 2-d tile's columns and its rows' sums by index
vectors. On the GPU, each runs against torch at ragged sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gpu_util import assert_assembles_without_spills, loaded_kernel, requires_gpu

from tawac.check import baseline, validate_pipeline
from tawac.check.validate import run
from tawac.compiler import compile_source, parse_file, parse_text
from tawac.dialects import tile
from tawac.support.diagnostics import CompileError
from tawac.target.layouts import AccLayout, BlockedLayout

DATA = Path(__file__).resolve().parent / "data" / "no_mma"
PROGRAMS = {
    "masked_scale_1d": {"N": 2500, "n": 1800, "s": 1.5},
    "masked_rows_cols": {"M": 300, "N": 64, "k": 40},
}


def _compile(name: str):
    return compile_source((DATA / f"{name}.mlir").read_text(), f"{name}.mlir")


def _kernel(name: str) -> tile.KernelOp:
    return next(o for o in parse_file(DATA / f"{name}.mlir").walk() if isinstance(o, tile.KernelOp))


def test_a_1d_iota_round_trips():
    text = """tile.kernel @k(%c0: index) {
  %r = tile.iota 0, %c0 : tensor<1024xi32>
  tile.return
}"""
    assert "tile.iota 0, %c0 : tensor<1024xi32>" in str(parse_text(text, "k.mlir"))


def test_a_1d_iota_along_dimension_1_is_refused_where_it_is():
    text = """tile.kernel @k(%c0: index) {
  %r = tile.iota 1, %c0 : tensor<1024xi32>
  tile.return
}"""
    with pytest.raises(CompileError, match=r"k\.mlir:2:8: error: tile\.iota: dimension 1 out of"):
        parse_text(text, "k.mlir")


def test_the_interpreter_gives_origin_plus_i():
    """Past n the mask is false: y is x * s below n (origin + i), 0 from n on."""
    sizes = PROGRAMS["masked_scale_1d"]
    inputs = {"x": torch.randn(2500), "y": torch.full((2500,), float("nan")), "s": 1.5, "n": 1800}
    got = run(_kernel("masked_scale_1d"), inputs)["y"]
    i = torch.arange(sizes["N"])
    torch.testing.assert_close(got, torch.where(i < 1800, inputs["x"] * 1.5, 0.0))


def test_the_interpreter_masks_rows_and_columns():
    m, n, k = 300, 64, 40
    x, w = torch.randn(m, n), torch.randn(n)
    inputs = {"x": x, "w": w, "y": torch.full((m, n), float("nan")), "k": k}
    got = run(_kernel("masked_rows_cols"), inputs)["y"]
    torch.testing.assert_close(got, _rows_cols_reference(x, w, k))


def _rows_cols_reference(x, w, k: int):
    p = x * torch.where(torch.arange(x.shape[1], device=x.device) < k, w, 0.0)
    s = p.sum(dim=1, keepdim=True)
    return p + torch.where(torch.arange(x.shape[0], device=x.device)[:, None] >= k, s, 0.0)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_tile_passes_keep_its_meaning(name):
    module = parse_file(DATA / f"{name}.mlir")
    validate_pipeline(module, baseline(module, PROGRAMS[name]), program=name)


def test_the_blocked_iota_is_the_thread_start_plus_each_register_offset():
    """1024 f32 over 128 threads: runs of 4, two a thread; the iota shares the loads'
    thread start (one shl), adds each of the 8 register offsets to it once, and compares
    each with n: 8 setp against n, 8 selp of the mask, the two 16-byte stores."""
    ptx = _compile("masked_scale_1d").ptx
    lay = BlockedLayout.for_tile(1024, 128, 4)
    assert lay.reg_offsets() == (0, 1, 2, 3, 512, 513, 514, 515)
    lines = ptx.splitlines()
    (n_reg,) = [ln.split()[1].rstrip(",") for ln in lines if "[n];" in ln]
    assert sum(f", {n_reg};" in ln and "setp.lt.s32" in ln for ln in lines) == lay.num_regs
    assert ptx.count("shl.b32") == 1
    # the mask's only: the producer streams x (TMA's zeros past N are its padding)
    assert ptx.count("selp.f32") == lay.num_regs
    assert ptx.count("st.global.v4.b32") == 2


def test_the_slice_iotas_are_the_thread_coordinate_plus_each_offset():
    """A 128x64 tile over 2 warp groups: the column iota has one register per column
    offset of the thread (16), the row iota one per row offset (2), each compared with k."""
    ptx = _compile("masked_rows_cols").ptx
    lay = AccLayout(128, 64, 2)
    lines = ptx.splitlines()
    (k_reg,) = [ln.split()[1].rstrip(",") for ln in lines if "[k];" in ln]
    lt = sum(f", {k_reg};" in ln and "setp.lt.s32" in ln for ln in lines)
    ge = sum(f", {k_reg};" in ln and "setp.ge.s32" in ln for ln in lines)
    assert (lt, ge) == (len(lay.col_offsets()), len(lay.row_offsets())) == (16, 2)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_assembles_without_spills(name):
    assert_assembles_without_spills(_compile(name).ptx)


# ---- on the GPU


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("size", "n"), [(1, 1), (1000, 0), (2500, 1800), (4097, 4097), (9000, 5)])
def test_masked_scale_matches_torch_on_the_gpu(size, n):
    kernel = loaded_kernel(DATA / "masked_scale_1d.mlir")
    g = torch.Generator(device="cuda").manual_seed(size + n)
    x = torch.randn(size, device="cuda", generator=g)
    y = torch.full_like(x, float("nan"))
    kernel(x, y, 1.5, n)
    torch.cuda.synchronize()
    i = torch.arange(size, device="cuda")
    torch.testing.assert_close(y, torch.where(i < n, x * 1.5, 0.0))


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "k"), [(1, 0), (300, 40), (1000, 64), (129, 200)])
def test_masked_rows_cols_matches_torch_on_the_gpu(m, k):
    kernel = loaded_kernel(DATA / "masked_rows_cols.mlir")
    g = torch.Generator(device="cuda").manual_seed(m + k)
    x = torch.randn(m, 64, device="cuda", generator=g)
    w = torch.randn(64, device="cuda", generator=g)
    y = torch.full_like(x, float("nan"))
    kernel(x, w, y, k)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, _rows_cols_reference(x, w, k), rtol=1e-4, atol=1e-4)
