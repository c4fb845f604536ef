"""The Triton tutorial's persistent matmul with host-side tensor descriptors
(`examples/triton/matmul_persistent.py`) through `convert-ttir`: the persistent
loop over tiles becomes tawac's own grid (its grouped order checked to visit every tile
once), descriptor loads and stores become tile loads and stores, `b.T` a transposed
operand. Run by the CPU interpreter with Triton's arguments (descriptors as the
launcher passes them), against torch; the cubin assembled without spills; on the GPU
from `.ttir`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from gpu_util import requires_gpu

from tawac.compiler import compile_module, parse_file
from tawac.dialects import tile
from tawac.runtime.arguments import LaunchError
from tawac.runtime.interpret import interpret
from tawac.triton import TritonKernel, kernel_abi

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "examples/triton/matmul_persistent.ttir"
BM, BN, BK = 128, 256, 64


@dataclass
class Desc:
    """What `triton.tools.tensor_descriptor.TensorDescriptor` holds."""

    base: torch.Tensor
    shape: list[int]
    strides: list[int]
    block_shape: list[int]

    @staticmethod
    def of(t: torch.Tensor, block: list[int]) -> Desc:
        return Desc(t, list(t.shape), list(t.stride()), block)


def _descs(a, b, c):
    return Desc.of(a, [BM, BK]), Desc.of(b, [BN, BK]), Desc.of(c, [BM, BN])


def _kernel(launch) -> TritonKernel:
    return TritonKernel.from_abi(kernel_abi(SOURCE.read_text(), str(SOURCE)), launch)


def test_the_persistent_loop_becomes_the_grid():
    op = next(o for o in parse_file(SOURCE).walk() if isinstance(o, tile.KernelOp))
    names = [o.name for o in op.walk()]
    assert names.count("scf.for") == 1  # the K loop; the loop over tiles is tawac's grid
    assert names.count("tile.program_id") == 2
    (dot,) = [o for o in op.walk() if isinstance(o, tile.DotOp)]
    assert dot.transpose_rhs is not None  # b.T of B stored N x K
    assert [str(a.type) for a in op.body.block.args][-1] == "index"  # K bounds the loop


@pytest.mark.parametrize(("m", "n", "k"), [(300, 520, 200), (128, 256, 64), (1000, 100, 70)])
def test_the_converted_persistent_matmul_matches_torch(m, n, k):
    op = next(o for o in parse_file(SOURCE).walk() if isinstance(o, tile.KernelOp))

    def launch(*args):
        interpret(op, list(args), (-(-m // BM), -(-n // BN), 1))

    torch.manual_seed(0)
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(n, k, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    _kernel(launch)[(132,)](*_descs(a, b, c), m, n, k)
    ref = a.float() @ b.float().T
    assert not torch.isnan(c).any()
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


def test_descriptor_launch_errors_are_one_line():
    a = torch.randn(256, 64, dtype=torch.float16)
    b = torch.randn(256, 64, dtype=torch.float16)
    c = torch.zeros(256, 256, dtype=torch.float16)
    k = _kernel(lambda *args: None)
    assert k.params == ["a_desc", "b_desc", "c_desc", "M", "N", "K"]
    with pytest.raises(LaunchError, match=r"argument M = 200, but the output's size"):
        k(*_descs(a, b, c), 200, 256, 64)
    da, db, dc = _descs(a, b, c)
    with pytest.raises(LaunchError, match=r"argument a_desc: block shape \[64, 64\]"):
        k(Desc.of(a, [64, 64]), db, dc, 256, 256, 64)
    with pytest.raises(LaunchError, match="argument b_desc: a TensorDescriptor is needed"):
        k(da, b, dc, 256, 256, 64)


@pytest.mark.parametrize(
    "path", [SOURCE, REPO / "examples/triton/matmul_descriptor_persistent.ttir"]
)
def test_the_converted_persistent_matmuls_assemble_without_spills(path):
    res = compile_module(parse_file(path), cubin=True)
    assert "0 bytes spill stores" in res.ptxas_report
    assert "C75" not in res.ptxas_report


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(4096, 4096, 4096), (3000, 5000, 2000), (200, 300, 130)])
def test_the_persistent_matmul_on_the_gpu(m, n, k):
    from tawac.triton import from_ttir

    kern = from_ttir(SOURCE.read_text(), str(SOURCE))
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kern[(132,)](*_descs(a, b, c), m, n, k)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


def test_a_program_order_of_more_sizes_than_output_dimensions_is_one_error():
    """Found by a mutant (the constant 128 made 0, so the order reads M, N and K): more
    integer arguments than output sizes to tie them to was an internal error."""
    from tawac.compiler import parse_text
    from tawac.support.diagnostics import CompileError

    text = SOURCE.read_text()
    bad = text.replace("%c128_i32 = arith.constant 128 : i32", "%c128_i32 = arith.constant 0 : i32")
    assert bad != text
    with pytest.raises(CompileError) as err:
        parse_text(bad, "p.ttir")
    assert "\n" not in str(err.value)
    assert "matmul_persistent.py:" in str(err.value.location)


DEVICE = REPO / "examples/triton/matmul_descriptor_persistent.ttir"


def test_device_side_descriptors_are_tensors_of_their_pointers():
    """`tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], ...)`: the tensor
    of `a_ptr` with sizes M, K and strides K, 1: the ABI takes them from the arguments."""
    abi = kernel_abi(DEVICE.read_text(), str(DEVICE))
    names = abi.names
    got = [
        ([names[i] for i in t.sizes], [names[i] if i is not None else 1 for i in t.strides])
        for t in abi.tensors
    ]
    assert got == [(["M", "K"], ["K", 1]), (["N", "K"], ["K", 1]), (["M", "N"], ["N", 1])]
    assert abi.ties == () and abi.descs == ()


@pytest.mark.parametrize(("m", "n", "k"), [(300, 520, 200), (1000, 100, 70)])
def test_the_device_descriptor_matmul_matches_torch(m, n, k):
    op = next(o for o in parse_file(DEVICE).walk() if isinstance(o, tile.KernelOp))

    def launch(*args):
        interpret(op, list(args), (-(-m // BM), -(-n // BN), 1))

    torch.manual_seed(1)
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(n, k, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    kern = TritonKernel.from_abi(kernel_abi(DEVICE.read_text(), str(DEVICE)), launch)
    kern[(132,)](a, b, c, m, n, k)
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize(("m", "n", "k"), [(4096, 4096, 4096), (200, 300, 130)])
def test_the_device_descriptor_matmul_on_the_gpu(m, n, k):
    from tawac.triton import from_ttir

    kern = from_ttir(DEVICE.read_text(), str(DEVICE))
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kern[(132,)](a, b, c, m, n, k)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3
