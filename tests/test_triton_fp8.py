"""fp8 through the Triton front end: `tests/data/triton/matmul_fp8.py`, an e4m3
matmul over device-side descriptors. With an f16 output it converts, runs on the CPU
interpreter against torch and assembles without spills; with an fp8 output its
`tt.fp_to_fp` is read (as `arith.truncf`) and refused by the backend with one line at the
Python source (fp8 tiles are MMA operands only)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_inprocess import tawac
from gpu_util import requires_gpu

from tawac.compiler import compile_module, parse_file
from tawac.dialects import tile
from tawac.runtime.interpret import interpret
from tawac.triton import TritonKernel, kernel_abi

DATA = Path(__file__).resolve().parent / "data/triton"
F16_OUT = DATA / "matmul_fp8.ttir"
FP8_OUT = DATA / "matmul_fp8_out.ttir"


def _inputs(m, n, k, device="cpu"):
    torch.manual_seed(0)
    a = (torch.randn(m, k, device=device) / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device=device) / 2).to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
    return a, b, c


def test_fp_to_fp_is_read_as_a_truncation():
    op = next(o for o in parse_file(FP8_OUT).walk() if isinstance(o, tile.KernelOp))
    (trunc,) = [o for o in op.walk() if o.name == "arith.truncf"]
    assert str(trunc.result.type) == "tensor<128x128xf8E4M3FN>"


def test_an_fp8_output_is_one_located_line(tmp_path):
    out = tmp_path / "k.ptx"
    proc = tawac(["compile", str(FP8_OUT), "-o", str(out)])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert not out.exists()
    (line,) = proc.stderr.strip().splitlines()
    assert "matmul_fp8.py:" in line and "fp8 tiles are supported only as tile.dot operands" in line


@pytest.mark.parametrize(("m", "n", "k"), [(200, 300, 256), (128, 128, 128)])
def test_the_fp8_matmul_matches_torch(m, n, k):
    op = next(o for o in parse_file(F16_OUT).walk() if isinstance(o, tile.KernelOp))
    kern = TritonKernel.from_abi(
        kernel_abi(F16_OUT.read_text(), str(F16_OUT)),
        lambda *args: interpret(op, list(args), (-(-m // 128), -(-n // 128), 1)),
    )
    a, b, c = _inputs(m, n, k)
    kern(a, b, c, m, n, k)
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


def test_the_fp8_matmul_assembles_without_spills():
    res = compile_module(parse_file(F16_OUT), cubin=True)
    assert "0 bytes spill stores" in res.ptxas_report
    assert "e4m3" in res.ptx


@pytest.mark.gpu
@requires_gpu
def test_the_fp8_matmul_on_the_gpu():
    from tawac.triton import from_ttir

    kern = from_ttir(F16_OUT.read_text(), str(F16_OUT))
    m, n, k = 1000, 2048, 512
    a, b, c = _inputs(m, n, k, "cuda")
    kern(a, b, c, m, n, k)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3
