"""Triton's launch convention for a tawac-compiled Triton kernel (`tawac.triton`), on the
CPU: the tile kernel run by the interpreter on the strided views the adapter builds from
Triton's arguments (pointers as tensors, sizes, strides)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tawac.compiler import parse_file
from tawac.dialects import tile
from tawac.runtime.arguments import LaunchError
from tawac.runtime.interpret import interpret
from tawac.triton import TritonKernel, abi_of

REPO = Path(__file__).resolve().parent.parent
MATMUL = REPO / "examples/triton/matmul.ttir"
CONSTS = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}


def _kernel() -> TritonKernel:
    names, tensors = abi_of(MATMUL.read_text(), str(MATMUL))
    op = next(o for o in parse_file(MATMUL).walk() if isinstance(o, tile.KernelOp))

    def launch(a, b, c):
        m, n = c.shape
        interpret(op, [a, b, c], (-(-m // 128), -(-n // 256), 1))

    return TritonKernel(names, tensors, launch, CONSTS, "matmul_kernel")


def _args(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    return (a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())


def test_the_abi_ties_each_pointer_to_its_sizes_and_strides():
    names, tensors = abi_of(MATMUL.read_text(), str(MATMUL))
    assert names[:6] == ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K"]
    got = [([names[i] for i in t.sizes], [names[i] for i in t.strides]) for t in tensors]
    assert got == [
        (["M", "K"], ["stride_am", "stride_ak"]),
        (["K", "N"], ["stride_bk", "stride_bn"]),
        (["M", "N"], ["stride_cm", "stride_cn"]),
    ]


def test_called_as_triton_is_it_computes_a_times_b():
    torch.manual_seed(0)
    a = torch.randn(200, 130, dtype=torch.float16)
    b = torch.randn(130, 300, dtype=torch.float16)
    c = torch.full((200, 300), float("nan"), dtype=torch.float16)
    grid = (2 * 2,)
    _kernel()[grid](*_args(a, b, c), **CONSTS, num_warps=8, num_stages=3)
    ref = a.float() @ b.float()
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


def test_a_view_inside_a_larger_tensor():
    """Strides and storage offsets come from the arguments: a column slice of C."""
    torch.manual_seed(1)
    a = torch.randn(64, 64, dtype=torch.float16)
    b = torch.randn(64, 100, dtype=torch.float16)
    big = torch.zeros(64, 300, dtype=torch.float16)
    c = big[:, 100:200]
    _kernel()(*_args(a, b, c))
    assert torch.allclose(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)
    assert big[:, :100].abs().max() == 0 and big[:, 200:].abs().max() == 0


def test_launch_errors_are_one_line():
    a = torch.randn(64, 64, dtype=torch.float16)
    b = torch.randn(64, 64, dtype=torch.float16)
    c = torch.zeros(64, 64, dtype=torch.float16)
    k = _kernel()
    with pytest.raises(LaunchError, match="argument a_ptr: its dimension K has stride 64"):
        k(*_args(a.t(), b, c))  # A column-major: K is not contiguous
    with pytest.raises(LaunchError, match="compiled with BLOCK_SIZE_K=64, called with 32"):
        k(*_args(a, b, c), BLOCK_SIZE_K=32)
    with pytest.raises(LaunchError, match="takes 12 arguments"):
        k(a, b, c)
