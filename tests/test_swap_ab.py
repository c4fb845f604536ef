"""swap-AB (`swap-ab`) on the CPU: the rewritten program computes what the original
computes (the reference interpreter, at decode and ragged sizes, token tiles of 8 to 64
rows), and the rewrite keeps to what it can prove (refusals, located)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tawac.compiler import parse_file  # noqa: E402
from tawac.dialects import tile  # noqa: E402
from tawac.passes.swap_ab import analyse, rewrite  # noqa: E402
from tawac.runtime.interpret import interpret  # noqa: E402
from tawac.support.diagnostics import CompileError  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _kernel(name: str, **params) -> tile.KernelOp:
    module = parse_file(EXAMPLES / name, params=params or None)
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def _run(kern: tile.KernelOp, a, b, bm: int, bn: int):
    c = torch.full((a.shape[0], b.shape[0]), float("nan")).to(a.dtype)
    interpret(kern, [a, b, c], (math.ceil(a.shape[0] / bm), math.ceil(b.shape[0] / bn), 1))
    return c


@pytest.mark.parametrize(("bm", "bn"), [(16, 64), (8, 128), (32, 64), (64, 64)])
@pytest.mark.parametrize(("m", "n", "k"), [(1, 256, 512), (17, 200, 136), (40, 96, 64)])
def test_swapped_program_computes_the_same(bm, bn, m, n, k):
    """C = A B^T from the swapped program (C^T tiles stored transposed) equals the
    original's, element for element, with rows, columns and K steps past the ends."""
    params = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64}
    g = torch.Generator().manual_seed(m * 7 + n + k)
    a = torch.randn(m, k, generator=g).bfloat16()
    b = torch.randn(n, k, generator=g).bfloat16()
    plain = _run(_kernel("gemm.mlir", **params), a, b, bm, bn)
    swapped = _kernel("gemm.mlir", **params)
    found = analyse(swapped)
    assert not isinstance(found, tuple), found
    rewrite(swapped, found)
    got = _run(swapped, a, b, bm, bn)
    assert not torch.isnan(got.float()).any()
    assert torch.equal(got, plain)
    ref = a.float() @ b.float().T
    assert ((got.float() - ref).norm() / ref.norm()).item() < 1e-2


def test_the_rewrite_transposes_the_tile_and_marks_the_store():
    kern = _kernel("gemm.mlir", BLOCK_M=16, BLOCK_N=64, BLOCK_K=128)
    found = analyse(kern)
    assert not isinstance(found, tuple)
    rewrite(kern, found)
    (dot,) = [o for o in kern.walk() if isinstance(o, tile.DotOp)]
    assert dot.mnk() == (64, 16, 128)
    (st,) = [o for o in kern.walk() if isinstance(o, tile.StoreOp)]
    assert st.transposed is not None
    assert tuple(st.value.type.get_shape()) == (64, 16)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("gemm_bias.mlir", "elementwise ops on the accumulator and splat constants only"),
        ("attention.mlir", "exactly one tile.dot, the kernel has 2"),
        ("gemm_nn.mlir", "operands both K-major"),
    ],
)
def test_what_it_cannot_swap_is_named(name, why):
    found = analyse(_kernel(name))
    assert isinstance(found, tuple)
    assert why in found[0]


def test_a_bounded_transposed_store_is_refused_by_the_verifier():
    kern = _kernel("gemm.mlir", BLOCK_M=16, BLOCK_N=64)
    found = analyse(kern)
    assert not isinstance(found, tuple)
    rewrite(kern, found)
    (st,) = [o for o in kern.walk() if isinstance(o, tile.StoreOp)]
    bounded = tile.StoreOp(st.value, st.dest, st.indices, st.indices, transposed=True)
    with pytest.raises(Exception, match="transposed store cannot be stacked or bounded"):
        bounded.verify_()
    st.verify_()


def test_pipeline_refuses_swap_ab_with_split_k():
    from tawac.driver import compile_file

    with pytest.raises(CompileError, match="split-K and stream-K do not combine with swap-AB"):
        compile_file(EXAMPLES / "gemm.mlir", cubin=False, swap_ab=True, split_k=2)
