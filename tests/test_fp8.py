"""fp8 (f8E4M3FN, f8E5M2) GEMMs on the CPU: the tile dialect accepts the types, the
interpreter computes with the dequantised inputs, the code generator emits k32 fp8
wgmmas with both operands K-major in shared memory, and the runtime's pure pieces (tensor
maps, padding, random inputs) treat fp8 tensors as bytes.

The GPU runs are tests/test_gpu_fp8.py; ptxas and SASS checks of examples/gemm_fp8.mlir
are in tests/test_examples.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tawac.dialects import tile
from tawac.driver import compile_source
from tawac.ir.parser import parse_text
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "gemm_fp8.mlir"
ROWCOL = REPO / "tests" / "data" / "gemm_fp8_rowcol.mlir"

FP8 = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}


def fp8_gemm_text(a: str = "f8E4M3FN", b: str = "f8E4M3FN", out: str = "bf16") -> str:
    """examples/gemm_fp8.mlir with other operand formats and output type (f32: the
    scaled accumulator stored without rounding)."""
    text = EXAMPLE.read_text()
    text = text.replace("%b: !tile.tensor<?x?xf8E4M3FN", f"%b: !tile.tensor<?x?x{b}")
    text = text.replace(
        'tile.load %b[%n0, %k] : !tile.tensor<?x?xf8E4M3FN, ["N", "K"]> -> '
        "tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN>",
        f'tile.load %b[%n0, %k] : !tile.tensor<?x?x{b}, ["N", "K"]> -> '
        f"tensor<$BLOCK_Nx$BLOCK_Kx{b}>",
    )
    text = text.replace(
        ", tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN> ->", f", tensor<$BLOCK_Nx$BLOCK_Kx{b}> ->"
    )
    text = text.replace("f8E4M3FN", a)
    if out == "f32":  # no rounding: store the scaled accumulator itself
        text = re.sub(r"  %o = arith\.truncf .*\n", "", text).replace(
            "tile.store %o", "tile.store %r"
        )
    return text.replace("xbf16", f"x{out}")


def kernel_of(text: str, params=None) -> tile.KernelOp:
    module = parse_text(text, "fp8.mlir", params=params)
    return next(op for op in module.walk() if isinstance(op, tile.KernelOp))


# ------------------------------------------------------------------ the tile dialect


@pytest.mark.parametrize("a,b", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
def test_parser_and_verifier_accept_fp8(a, b):
    k = kernel_of(fp8_gemm_text(FP8[a], FP8[b]))
    ta, tb = (arg.type for arg in k.body.block.args[:2])
    assert isinstance(ta, tile.GlobalTensorType) and str(ta.element_type) == FP8[a]
    assert str(tb.element_type) == FP8[b]
    dot = next(op for op in k.walk() if isinstance(op, tile.DotOp))
    assert str(dot.lhs.type) == f"tensor<128x128x{FP8[a]}>"
    assert str(dot.rhs.type) == f"tensor<256x128x{FP8[b]}>"


def test_verifier_rejects_other_8_bit_floats_and_fp8_times_bf16():
    with pytest.raises(CompileError, match="f8E4M3 is not supported .*f8E4M3FN and f8E5M2"):
        kernel_of(fp8_gemm_text().replace("f8E4M3FN", "f8E4M3"))
    text = fp8_gemm_text(b="bf16")
    with pytest.raises(CompileError, match="operand element types differ"):
        kernel_of(text)


# ------------------------------------------------------------------ the interpreter


def _dequantised_reference(a, b, scale):
    """float32 product of the dequantised (fp8 -> float32) inputs, times the scale."""

    return (a.float() @ b.float().T) * scale


@pytest.mark.parametrize("a_fmt,b_fmt", [("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2")])
def test_interpreter_fp8_gemm_equals_float32_product_of_dequantised_inputs(a_fmt, b_fmt):
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    dt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    m, n, k, bm, bn, bk = 70, 50, 96, 32, 32, 32
    kern = kernel_of(
        fp8_gemm_text(FP8[a_fmt], FP8[b_fmt], out="f32"),
        params={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
    )
    g = torch.Generator().manual_seed(11)
    a = (torch.randn(m, k, generator=g) * 2).to(dt[a_fmt])
    b = (torch.randn(n, k, generator=g) * 2).to(dt[b_fmt])
    c = torch.full((m, n), float("nan"))
    sa, sb = 0.75, 1.5
    interpret(kern, [a, b, c, sa, sb], (-(-m // bm), -(-n // bn), 1))
    ref = _dequantised_reference(a, b, sa * sb)
    assert not c.isnan().any()
    # fp8 products are exact in float32; only the summation order differs by tile.
    torch.testing.assert_close(c, ref, rtol=1e-5, atol=1e-4)


def test_interpreter_rounds_loads_to_the_declared_fp8_type():
    """Inputs given in float32 are read as the kernel declares them: rounded to e4m3."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    kern = kernel_of(fp8_gemm_text(out="f32"), params={"BLOCK_M": 16, "BLOCK_N": 16})
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(16, 32, generator=g), torch.randn(16, 32, generator=g)
    c = torch.zeros(16, 16)
    interpret(kern, [a, b, c, 1.0, 1.0], (1, 1, 1))
    e4 = torch.float8_e4m3fn
    torch.testing.assert_close(c, _dequantised_reference(a.to(e4), b.to(e4), 1.0))
    assert not torch.allclose(c, a @ b.T, rtol=1e-3, atol=1e-3)


def test_interpreter_row_and_column_scales():
    """tests/data/gemm_fp8_rowcol.mlir: C = (A B^T) * scale_a[:, None] * scale_b[None, :]."""
    torch = pytest.importorskip("torch")
    from tawac.runtime.interpret import interpret

    kern = kernel_of(ROWCOL.read_text(), params={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32})
    m, n, k = 45, 40, 64
    g = torch.Generator().manual_seed(5)
    a = torch.randn(m, k, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, generator=g).to(torch.float8_e5m2)
    sa, sb = torch.rand(m, generator=g) + 0.5, torch.rand(n, generator=g) + 0.5
    c = torch.full((m, n), float("nan"), dtype=torch.bfloat16)
    interpret(kern, [a, b, sa, sb, c], (-(-m // 32), -(-n // 16), 1))
    ref = (a.float() @ b.float().T) * sa[:, None] * sb[None, :]
    torch.testing.assert_close(c.float(), ref.to(torch.bfloat16).float(), rtol=8e-3, atol=1e-3)


# ------------------------------------------------------------------ code generation


def _ptx(text: str, **options) -> str:
    return compile_source(text, "fp8.mlir", cubin=False, **options).ptx


def _wgmmas(ptx: str) -> list[str]:
    return re.findall(r"wgmma\.mma_async\.sync\.aligned\.\S+", ptx)


@pytest.mark.parametrize(
    "a,b,suffix",
    [("e4m3", "e4m3", "e4m3.e4m3"), ("e5m2", "e5m2", "e5m2.e5m2"), ("e4m3", "e5m2", "e4m3.e5m2")],
)
def test_fp8_wgmma_k32_steps(a, b, suffix):
    """128x256x128 tiles, two consumer warp groups: four k32 steps of one m64n256 block,
    each wgmma with both descriptors and no transpose operands."""
    ptx = _ptx(fp8_gemm_text(FP8[a], FP8[b]))
    assert _wgmmas(ptx) == [f"wgmma.mma_async.sync.aligned.m64n256k32.f32.{suffix}"] * 4
    for line in re.findall(r"wgmma\.mma_async.*", ptx):
        assert re.search(r"\}, %rd\d+, %rd\d+, %p\d+, 1, 1;$", line), line
    assert "k16" not in ptx


def test_fp8_box_and_transfer_bytes_are_in_bytes():
    """A 128-byte swizzle row holds 128 fp8 elements: one box of 128 columns per tile, and
    the stage's transaction bytes are elements (128x128 + 256x128)."""
    res = compile_source(fp8_gemm_text(), "fp8.mlir", cubin=False)
    boxes = {p["arg"]: p["box"] for p in res.sidecar["params"] if p["kind"] == "tensor_map"}
    assert boxes["a"] == [128, 128] and boxes["b"] == [128, 256]
    assert "expect_tx.shared::cta.b64 _, [%r" in res.ptx
    assert re.search(r"expect_tx\.shared::cta\.b64 _, \[%r\d+\], 49152;", res.ptx)
    dtypes = {a["name"]: a["dtype"] for a in res.sidecar["args"]}
    assert dtypes == {"a": "f8E4M3FN", "b": "f8E4M3FN", "c": "bf16", "scale_a": "f32",
                      "scale_b": "f32"}  # fmt: skip


def test_fp8_mn_major_operand_is_a_located_error():
    nn = (
        fp8_gemm_text()
        .replace('["N", "K"]', '["K", "N"]')
        .replace("tile.load %b[%n0, %k]", "tile.load %b[%k, %n0]")
        .replace("tensor<$BLOCK_Nx$BLOCK_Kxf8E4M3FN>", "tensor<$BLOCK_Kx$BLOCK_Nxf8E4M3FN>")
        .replace(" transpose_rhs", "")
    )
    with pytest.raises(CompileError) as e:
        _ptx(nn)
    msg = str(e.value)
    assert msg.startswith("fp8.mlir:20:10: error:"), msg
    assert "right operand (B)" in msg and "MN-major" in msg and "K-major" in msg, msg


def test_fp8_output_is_a_located_error():
    with pytest.raises(CompileError, match=r"fp8\.mlir:26:8: .*arith\.truncf makes a tensor"):
        _ptx(fp8_gemm_text(out="f8E4M3FN"))


def test_rowcol_scales_compile():
    ptx = _ptx(ROWCOL.read_text())
    assert _wgmmas(ptx) == ["wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2"] * 4


# ------------------------------------------------------------------ runtime pieces


def test_runtime_treats_fp8_as_bytes():
    from tawac.runtime.arguments import TENSOR_DTYPES, TensorView
    from tawac.runtime.tensor_maps import needs_padding, padded_inner_size, tensor_map_dims

    for name, torch_name in (("f8E4M3FN", "float8_e4m3fn"), ("f8E5M2", "float8_e5m2")):
        assert TENSOR_DTYPES[name] == (torch_name, "CU_TENSOR_MAP_DATA_TYPE_UINT8", 1)
    view = TensorView((4096, 1000), (1000, 1), 0x1000, 1)
    param = {"kind": "tensor_map", "arg": "a", "box": [128, 128], "swizzle": "128B"}
    dims, strides, box, _ = tensor_map_dims(param, view)
    assert dims == [1000, 4096] and strides == [1000] and box == [128, 128]
    assert needs_padding(view)  # 1000-byte rows: not a multiple of 16
    assert not needs_padding(TensorView((64, 1008), (1008, 1), 0x1000, 1))
    assert padded_inner_size(1000, 1) == 1008


def test_make_args_draws_fp8_inputs():
    torch = pytest.importorskip("torch")
    from tawac.runtime.runner import make_args

    sidecar = compile_source(
        fp8_gemm_text(FP8["e4m3"], FP8["e5m2"]), "fp8.mlir", cubin=False
    ).sidecar
    args = make_args(sidecar, {"M": 64, "N": 48, "K": 32}, {2}, {0, 1}, device="cpu", scale=1000.0)
    a, b, c, sa, sb = args
    assert a.dtype == torch.float8_e4m3fn and a.shape == (64, 32)
    assert b.dtype == torch.float8_e5m2 and b.shape == (48, 32)
    # Drawn in float32 and clamped to each format's finite range before rounding.
    assert torch.isfinite(a.float()).all() and torch.isfinite(b.float()).all()
    assert a.float().abs().max() == 448.0
    assert c.dtype == torch.bfloat16 and c.isnan().all()
    assert (sa, sb) == (0.5, 0.5)
