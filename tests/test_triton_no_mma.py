"""Triton's tutorials without `tt.dot` through `convert-ttir` (`examples/triton/`):
01 vector add, 02 fused softmax (a grid-stride loop over rows, one program per row once
converted), 05 layer norm forward (loops over column blocks, 1-d accumulators, scalar
stores of the row's mean and 1/std) and its backward's column sums. Each converted tile
kernel runs in the CPU interpreter on the views Triton's arguments give (`tawac.triton`)
against a float32 torch reference at ragged sizes; the converted programs' key ops; the
refusals (grid-stride loops whose iterations are not proven independent, other
reductions, scalar stores of f16), each at its Python line (the backward's lock:
tests/test_triton_locks.py);
on the GPU, the same kernels compiled from Python by `tawac.triton`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from gpu_util import load_module, requires_gpu
from xdsl.dialects.builtin import TensorType, f32

from tawac.compiler import parse_file, parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import interpret_launch, launch_grid
from tawac.support.diagnostics import CompileError
from tawac.triton import TritonKernel, kernel_abi

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "triton"
TESTS = Path(__file__).resolve().parent


def _kernel(stem: str) -> tile.KernelOp:
    path = EXAMPLES / f"{stem}.ttir"
    return next(o for o in parse_file(path).walk() if isinstance(o, tile.KernelOp))


def _interpreted(stem: str) -> TritonKernel:
    """The converted kernel called as Triton's is, run by the interpreter (its grid the
    one the conversion infers)."""
    path = EXAMPLES / f"{stem}.ttir"
    op = _kernel(stem)
    abi = kernel_abi(path.read_text(), str(path))
    return TritonKernel.from_abi(abi, lambda *a: interpret_launch(op, list(a)), None, stem)


def _example(name: str):
    return load_module(EXAMPLES / f"{name}.py", name)


def _line(path: Path, function: str, text: str) -> int:
    """The line of `text`'s first occurrence in `function` of `path`."""
    lines = path.read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(f"def {function}("))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _layer_norm_ref(x, w, b, eps):
    xf = x.float()
    mean = xf.mean(-1)
    rstd = 1 / torch.sqrt(xf.var(-1, unbiased=False) + eps)
    y = (xf - mean[:, None]) * rstd[:, None] * w.float() + b.float()
    return y, mean, rstd


# ---- the interpreter against torch


@pytest.mark.parametrize("n", [1, 1000, 3000, 4096])
def test_vector_add_matches_torch(n):
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    out = torch.full((n,), float("nan"))
    _interpreted("vector_add")(x, y, out, n)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize(("rows", "cols", "pitch"), [(37, 781, 781), (5, 1024, 1100), (1, 1, 3)])
def test_fused_softmax_matches_torch(rows, cols, pitch):
    """Rows `pitch` elements apart (a column slice of a wider tensor: the row stride is
    an argument), the tail of each 1024-column block read as -inf."""
    g = torch.Generator().manual_seed(rows + cols)
    wide = torch.randn(rows, pitch, generator=g) * 3
    x = wide[:, :cols]
    out = torch.full((rows, pitch), float("nan"))
    y = out[:, :cols]
    _interpreted("fused_softmax")(y, x, x.stride(0), y.stride(0), rows, cols)
    assert (y - torch.softmax(x, -1)).abs().max().item() < 1e-6
    assert torch.isnan(out[:, cols:]).all()  # what no row reaches is not written


@pytest.mark.parametrize(("m", "n"), [(19, 1500), (3, 1024), (4, 7), (2, 2049)])
def test_layer_norm_forward_matches_torch(m, n):
    """Rows of 1, 2 and 3 column blocks of 1024 (the last ragged); y in float16, the
    row's mean and 1/std stored as float32 scalars."""
    g = torch.Generator().manual_seed(m * n)
    x = (-2.3 + 0.5 * torch.randn(m, n, generator=g)).half()
    w, b = torch.rand(n, generator=g).half(), torch.rand(n, generator=g).half()
    y = torch.full((m, n), float("nan")).half()
    mean, rstd = torch.full((m,), float("nan")), torch.full((m,), float("nan"))
    _interpreted("layer_norm")(x, y, w, b, mean, rstd, x.stride(0), n, 1e-5)
    ref, ref_mean, ref_rstd = _layer_norm_ref(x, w, b, 1e-5)
    assert (y.float() - ref).abs().max().item() < 4e-3
    assert (mean - ref_mean).abs().max().item() < 1e-5
    assert ((rstd - ref_rstd) / ref_rstd).abs().max().item() < 1e-5


@pytest.mark.parametrize(("groups", "n"), [(70, 300), (32, 128), (1, 5)])
def test_layer_norm_column_sums_match_torch(groups, n):
    """`_layer_norm_bwd_dwdb`: the column sums of the partial dw and db buffers (32-row
    blocks, the last ragged, over 128-column programs)."""
    g = torch.Generator().manual_seed(groups + n)
    dw, db = (torch.randn(groups, n, generator=g).half() for _ in range(2))
    fdw, fdb = (torch.full((n,), float("nan")).half() for _ in range(2))
    _interpreted("layer_norm_bwd_dwdb")(dw, db, fdw, fdb, groups, n)
    for got, part in ((fdw, dw), (fdb, db)):
        ref = part.float().sum(0)
        assert (got.float() - ref).abs().max().item() <= 1e-2 * max(1.0, ref.abs().max().item())


# ---- what the conversion makes


def test_the_softmax_rows_are_programs_over_n_rows():
    """The grid-stride loop `for row_idx in tl.range(pid, n_rows, num_programs)` is one
    program per row: no loop, the rows dimension sized by `n_rows` (the loop's end), and
    the grid is that many programs."""
    op = _kernel("fused_softmax")
    assert not [o for o in op.walk() if o.name == "scf.for"]
    names = [list(a.type.dim_names.data) for a in op.body.block.args]
    assert [[n.data for n in d] for d in names] == [["n_rows", "n_cols"]] * 2
    assert launch_grid(op, {"output": (37, 781), "input": (37, 781)}) == (37, 1, 1)
    reduces = [o for o in op.walk() if isinstance(o, tile.ReduceOp)]
    assert [(o.kind.data, o.result.type) for o in reduces] == [("max", f32), ("sum", f32)]


def test_the_layer_norm_keeps_its_loops_and_stores_its_scalars():
    """Three loops over 1024-column blocks (the first two carry a 1-d f32 accumulator);
    the mean and 1/std stored as 1-element tiles at the row; `tl.where(cols < N, x -
    mean, 0.)` a select on the index tile `off + [0, 1024)`."""
    op = _kernel("layer_norm")
    loops = [o for o in op.body.block.ops if o.name == "scf.for"]
    assert [len(lp.results) for lp in loops] == [1, 1, 0]
    stores = [o for o in op.walk() if isinstance(o, tile.StoreOp)]
    ones = [s for s in stores if s.value.type == TensorType(f32, [1])]
    assert [s.dest.name_hint for s in ones] == ["Mean", "Rstd"]
    assert all(isinstance(s.value.owner, tile.SplatOp) for s in ones)
    assert len([o for o in loops[1].walk() if isinstance(o, tile.SelectOp)]) == 1
    assert [o.kind.data for o in op.walk() if isinstance(o, tile.ReduceOp)] == ["sum", "sum"]


def test_the_layer_norm_compiles_its_one_element_stores_from_the_first_thread():
    """The mean and 1/std are 1-element tiles: a run of one for the consumer's first thread
    only, each store bounded by the least of the tensor's size and row + 1."""
    from tawac import driver
    from tawac.support.ptxas import assemble, locate_ptxas

    path = EXAMPLES / "layer_norm.ttir"
    ptx = driver.compile_module(driver.parse_text(path.read_text(), str(path))).ptx
    assert ptx.count("st.global.f32") == 2 and ptx.count("min.s32") == 2
    ptxas = locate_ptxas()
    if ptxas is not None:
        _, report = assemble(ptx, ptxas, verbose=True)
        assert "0 bytes spill stores, 0 bytes spill loads" in report, report


def test_the_column_sums_reduce_along_the_rows():
    op = _kernel("layer_norm_bwd_dwdb")
    reduces = [o for o in op.walk() if isinstance(o, tile.ReduceOp)]
    assert [(o.kind.data, o.dim.data) for o in reduces] == [("sum", 0), ("sum", 0)]
    assert [str(o.result.type) for o in reduces] == ["tensor<128xf32>"] * 2


# ---- refusals, each at its Python line


def _ttir(fn, signature: dict[str, str], constexprs: dict) -> str:
    from tawac.triton import ttir_of

    return ttir_of(fn, {k: signature[k] for k in fn.arg_names if k in signature}, constexprs)


def _refusal(text: str) -> str:
    with pytest.raises(CompileError) as info:
        parse_text(text, "refused.ttir")
    message = str(info.value)
    assert "\n" not in message and "error: convert-ttir: " in message
    return message


_ROWS = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"}
REFUSED = {
    # kernel: (extra signature, the line's text, the message)
    "rows_and_a_flag": (
        {"flag_ptr": "*fp32"},
        "tl.store(flag_ptr",
        "a store outside the grid-stride loop (once per program, not per row)",
    ),
    "rows_and_a_shared_row": (
        {"last_ptr": "*fp32"},
        "tl.store(last_ptr",
        "a store in a grid-stride loop that no dimension places at the loop's row",
    ),
    "rows_reading_the_next_row": (
        {},
        "after = tl.load",
        "a load in a grid-stride loop of a tensor the kernel stores to, other than the block",
    ),
    "row_product": (
        {"p_ptr": "*fp32"},
        "tl.reduce(x, 0, _times)",
        "a reduction other than tl.max, tl.min or tl.sum of one 1-d or 2-d float tile",
    ),
    "row_sum_f16": (
        {"s_ptr": "*fp16"},
        "tl.store(s_ptr",
        "a store of one f16 element (tawac stores f32 ones)",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_kernels_without_dot_refused_at_their_python_line(name):
    pytest.importorskip("triton")
    sys.path.insert(0, str(TESTS))
    import triton_no_mma_kernels as kernels

    extra, text, expected = REFUSED[name]
    message = _refusal(_ttir(getattr(kernels, name), {**_ROWS, **extra}, {"BLOCK": 256}))
    line = _line(TESTS / "triton_no_mma_kernels.py", name, text)
    assert f"triton_no_mma_kernels.py:{line}:" in message, message
    assert expected in message, message


def test_a_grid_stride_loop_in_place_converts():
    """Reading the very block its own iteration then writes (`y = 2 * y`, row by row) is
    no dependence between iterations."""
    pytest.importorskip("triton")
    sys.path.insert(0, str(TESTS))
    import triton_no_mma_kernels as kernels

    ttir = _ttir(kernels.rows_in_place, _ROWS, {"BLOCK": 256})
    op = next(o for o in parse_text(ttir, "in_place.ttir").walk() if isinstance(o, tile.KernelOp))
    y = torch.randn(9, 200)
    ref = y * 2
    interpret_launch(op, [y])
    assert torch.equal(y, ref)


# ---- on the GPU, from Python


def _compiled(example: str, config: str = "TTIR"):
    import tawac.triton

    cfg = getattr(_example(example), config)
    return tawac.triton.compile(
        cfg["kernel"], signature=cfg["signature"], constexprs=cfg["constexprs"]
    )


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("n", [1, 98_432, 1_000_003])
def test_vector_add_on_the_gpu(n):
    pytest.importorskip("triton")
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    _compiled("vector_add")[(_cdiv(n, 1024),)](x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("rows", "cols"), [(1823, 781), (4, 1024), (1000, 2)])
def test_fused_softmax_on_the_gpu(rows, cols):
    pytest.importorskip("triton")
    x = torch.randn(rows, cols, device="cuda") * 3
    y = torch.full_like(x, float("nan"))
    _compiled("fused_softmax")[(132,)](y, x, x.stride(0), y.stride(0), rows, cols)
    torch.cuda.synchronize()
    assert (y - torch.softmax(x, -1)).abs().max().item() < 1e-5


@pytest.mark.gpu
@requires_gpu
def test_a_fused_softmax_of_one_column_is_refused_at_its_line():
    """Rows of one column have a row stride of 1, which Triton's launcher specializes:
    the row's pointer is then `row_idx + cols` and its mask `cols < n_cols` a bound
    `n_cols + row_idx`, which names no size (a located refusal, not a wrong result)."""
    pytest.importorskip("triton")
    x = torch.randn(1000, 1, device="cuda")
    y = torch.full_like(x, float("nan"))
    with pytest.raises(CompileError, match=r"fused_softmax\.py:28:\d+: error: convert-ttir: "):
        _compiled("fused_softmax")[(132,)](y, x, x.stride(0), y.stride(0), 1000, 1)


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n"), [(1151, 1500), (64, 8192), (3, 7)])
def test_layer_norm_forward_on_the_gpu(m, n):
    pytest.importorskip("triton")
    x = (-2.3 + 0.5 * torch.randn(m, n, device="cuda")).half()
    w = torch.rand(n, device="cuda").half()
    b = torch.rand(n, device="cuda").half()
    y = torch.full_like(x, float("nan"))
    mean = torch.full((m,), float("nan"), device="cuda")
    rstd = torch.full((m,), float("nan"), device="cuda")
    _compiled("layer_norm")[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5)
    torch.cuda.synchronize()
    ref, ref_mean, ref_rstd = _layer_norm_ref(x, w, b, 1e-5)
    assert (y.float() - ref).abs().max().item() < 1e-2
    assert (mean - ref_mean).abs().max().item() < 1e-4
    assert ((rstd - ref_rstd) / ref_rstd).abs().max().item() < 1e-4
