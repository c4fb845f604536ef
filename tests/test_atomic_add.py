"""`tile.atomic_add`: tiles added to global memory by many programs at once (a column sum
whose row blocks all add into y, a sum of slices, a sum of vectors). The interpreter adds
every program's tile (deterministically, in its own order) and is checked against torch;
the tile passes keep the meaning; the backend adds each element once, by the thread that
holds it, as `red.global.add` (`.v2.f32` pairs of the accumulator layout or its column
slice, `.v4.f32` runs of a `BlockedLayout`, one element where the coordinate may be odd).
On the GPU each runs against torch at ragged sizes (the order of the adds differs from
the interpreter's: results agree within f32 rounding)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gpu_util import assert_assembles_without_spills, loaded_kernel, requires_gpu

from tawac.check import baseline, validate_pipeline
from tawac.compiler import compile_source, parse_file, parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch

DATA = Path(__file__).resolve().parent / "data" / "no_mma"
PROGRAMS = {
    "column_sum_atomic": {"M": 300, "N": 333},
    "split_add_atomic": {"S": 3, "M": 100, "N": 200},
    "vector_sum_atomic": {"S": 5, "N": 2500},
}


def _kernel(name: str) -> tile.KernelOp:
    module = parse_file(DATA / f"{name}.mlir")
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _compile(name: str):
    return compile_source((DATA / f"{name}.mlir").read_text(), f"{name}.mlir")


# ---- the interpreter against torch


def test_the_row_blocks_of_a_column_sum_all_add_into_y():
    """5 row blocks of 64 (300 rows) x 3 column blocks: every program's 128 sums added,
    the columns past 333 dropped."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 333, generator=g)
    y = torch.randn(333, generator=g)
    want = y + x.sum(dim=0)
    interpret_launch(_kernel("column_sum_atomic"), [x, y])
    torch.testing.assert_close(y, want)


def test_the_slices_all_add_into_one_block():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 100, 200, generator=g)
    y = torch.randn(100, 200, generator=g)
    want = y + 2 * x.sum(dim=0)
    interpret_launch(_kernel("split_add_atomic"), [x, y])
    torch.testing.assert_close(y, want)


def test_the_vectors_all_add_into_y():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 2500, generator=g)
    y = torch.zeros(2500)
    interpret_launch(_kernel("vector_sum_atomic"), [x, y])
    torch.testing.assert_close(y, x.sum(dim=0))


def test_an_add_outside_the_tensor_writes_nothing():
    """A tile at a negative origin and past the end: only its elements inside add."""
    text = """tile.kernel @edge(%y: !tile.tensor<?xf32, ["N"]>) {
  %c = arith.constant -100 : index
  %one = arith.constant dense<1.000000e+00> : tensor<128xf32>
  tile.atomic_add %one, %y[%c] : tensor<128xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
"""
    kernel = next(o for o in parse_text(text, "edge.mlir").walk() if isinstance(o, tile.KernelOp))
    y = torch.zeros(40)
    interpret_launch(kernel, [y])
    assert y[:28].eq(1).all() and y[28:].eq(0).all()


def test_cse_keeps_two_equal_adds():
    """An add writes memory: two equal ones are two adds, not one."""
    from xdsl.transforms.common_subexpression_elimination import cse

    text = (DATA / "column_sum_atomic.mlir").read_text()
    line = next(s for s in text.splitlines() if s.startswith("  tile.atomic_add"))
    module = parse_text(text.replace(line, f"{line}\n{line}"), "twice.mlir")
    cse(module)
    assert sum(isinstance(o, tile.AtomicAddOp) for o in module.walk()) == 2


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_tile_passes_keep_its_meaning(name):
    module = parse_file(DATA / f"{name}.mlir")
    validate_pipeline(module, baseline(module, PROGRAMS[name]), program=name)


# ---- the backend


def test_the_column_sums_add_pairs_from_the_first_row_of_threads():
    """128 column sums in the column slice of the 64x128 block: the threads of row 0 (4
    lanes, 32 columns each, in pairs) add them, 16 8-byte adds per thread, each under
    the thread's row 0 and the pair's column bound; y is read and written, 16-byte
    aligned (the pairs), and the module says PTX ISA 8.1 (`red`'s vector forms)."""
    res = _compile("column_sum_atomic")
    ptx = res.ptx
    assert ptx.count("red.global.add.v2.f32") == 16
    assert ptx.count("red.global.add") == 16
    adds = [line for line in ptx.splitlines() if "red.global" in line]
    assert all(line.strip().startswith("@%p") for line in adds)
    assert ".version 8.1" in ptx
    assert "st.global" not in ptx
    access = {a["name"]: a["access"] for a in res.sidecar["args"]}
    assert access == {"x": "read", "y": "readwrite"}
    aligned = {p["arg"] for p in res.sidecar["params"] if p.get("align") == 16}
    assert aligned == {"y"}
    grid = res.sidecar["program_grid"]  # persistent: the programs its CTAs walk
    assert grid[0] == {"cdiv": {"arg": "x", "dim": 0}, "by": 64}
    assert grid[1] == {"cdiv": {"arg": "y", "dim": 0}, "by": 128}


def test_a_block_adds_its_accumulator_pairs():
    """A 64x128 f32 block over 128 threads: 64 registers a thread, 32 8-byte adds."""
    ptx = _compile("split_add_atomic").ptx
    assert ptx.count("red.global.add.v2.f32") == 32
    assert ptx.count("red.global.add") == 32


def test_a_vector_adds_16_byte_runs():
    """1024 f32 over 128 threads: runs of 4, two a thread, one 16-byte add each."""
    res = _compile("vector_sum_atomic")
    assert res.ptx.count("red.global.add.v4.f32") == 2
    assert res.ptx.count("red.global.add") == 2
    assert res.sidecar["program_grid"][1] == {"cdiv": {"arg": "x", "dim": 0}, "by": 1}


def test_an_odd_coordinate_adds_element_by_element():
    """A block at a column that may be odd (pid * 127): one 4-byte add per register, no
    alignment asked of y."""
    text = (DATA / "split_add_atomic.mlir").read_text()
    text = text.replace("%bn = arith.constant 128", "%bn = arith.constant 127")
    res = compile_source(text, "odd.mlir")
    assert res.ptx.count("red.global.add.f32") == 64
    assert "red.global.add.v" not in res.ptx
    assert not any(p.get("align") for p in res.sidecar["params"])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_assembles_without_spills(name):
    assert_assembles_without_spills(_compile(name).ptx)


# ---- on the GPU


def _load(name: str):
    return loaded_kernel(DATA / f"{name}.mlir")


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1, 1), (300, 333), (4096, 128), (77, 1000)])
def test_column_sums_match_torch_on_the_gpu(m, n):
    kernel = _load("column_sum_atomic")
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(m, n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    want = y + x.sum(dim=0)
    kernel(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-4 * max(1, m) ** 0.5)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("s", "m", "n"), [(1, 1, 1), (3, 100, 200), (8, 257, 130)])
def test_slices_match_torch_on_the_gpu(s, m, n):
    kernel = _load("split_add_atomic")
    g = torch.Generator(device="cuda").manual_seed(s + m + n)
    x = torch.randn(s, m, n, device="cuda", generator=g)
    y = torch.randn(m, n, device="cuda", generator=g)
    want = y + 2 * x.sum(dim=0)
    kernel(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-4)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("s", "n"), [(1, 1), (5, 2500), (16, 4097)])
def test_vectors_match_torch_on_the_gpu(s, n):
    kernel = _load("vector_sum_atomic")
    g = torch.Generator(device="cuda").manual_seed(s + n)
    x = torch.randn(s, n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    want = y + x.sum(dim=0)
    kernel(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-4)
