"""CPU tests of the reference interpreter (tawac.runtime.interpret) on tiny tiles."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from xdsl.context import Context  # noqa: E402
from xdsl.dialects.arith import Arith  # noqa: E402
from xdsl.dialects.builtin import Builtin  # noqa: E402
from xdsl.dialects.math import Math  # noqa: E402
from xdsl.dialects.scf import Scf  # noqa: E402
from xdsl.parser import Parser  # noqa: E402

from tawac.dialects.tile import KernelOp, Tile  # noqa: E402
from tawac.runtime.interpret import InterpretError, interpret  # noqa: E402
from tawac.support.params import substitute  # noqa: E402


def parse_kernel(text: str) -> KernelOp:
    """Parses one tile.kernel (and verifies it)."""
    ctx = Context()
    for d in (Builtin, Arith, Math, Scf, Tile):
        ctx.load_dialect(d)
    # Kernel parameters ($NAME) at their defaults, as the driver substitutes them.
    module = Parser(ctx, substitute(text, "test.mlir").text, "test.mlir").parse_module()
    module.verify()
    return next(op for op in module.ops if isinstance(op, KernelOp))


def gemm_text(bm: int, bn: int, bk: int, dtype: str = "bf16", trans_b: bool = True) -> str:
    """C = A * B^T (B is NxK) or C = A * B (B is KxN), with BMxBN tiles."""
    b_dims = '["N", "K"]' if trans_b else '["K", "N"]'
    b_type = f"!tile.tensor<?x?x{dtype}, {b_dims}>"
    b_load = (
        f"%y = tile.load %b[%n0, %k] : {b_type} -> tensor<{bn}x{bk}x{dtype}>"
        if trans_b
        else f"%y = tile.load %b[%k, %n0] : {b_type} -> tensor<{bk}x{bn}x{dtype}>"
    )
    y_type = f"tensor<{bn}x{bk}x{dtype}>" if trans_b else f"tensor<{bk}x{bn}x{dtype}>"
    tr = "transpose_rhs " if trans_b else ""
    return f"""
tile.kernel @gemm(%a: !tile.tensor<?x?x{dtype}, ["M", "K"]>, %b: {b_type},
                  %c: !tile.tensor<?x?x{dtype}, ["M", "N"]>) {{
  %c0 = arith.constant 0 : index
  %cbk = arith.constant {bk} : index
  %cbm = arith.constant {bm} : index
  %cbn = arith.constant {bn} : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %cbm : index
  %n0 = arith.muli %pid_n, %cbn : index
  %K = tile.dim %a[1] : !tile.tensor<?x?x{dtype}, ["M", "K"]>
  %zero = arith.constant dense<0.000000e+00> : tensor<{bm}x{bn}xf32>
  %acc = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero) -> (tensor<{bm}x{bn}xf32>) {{
    %x = tile.load %a[%m0, %k] : !tile.tensor<?x?x{dtype}, ["M", "K"]> -> tensor<{bm}x{bk}x{dtype}>
    {b_load}
    %d = tile.dot %x, %y, %acc_i {tr}: tensor<{bm}x{bk}x{dtype}>, {y_type} -> tensor<{bm}x{bn}xf32>
    scf.yield %d : tensor<{bm}x{bn}xf32>
  }}
  %o = arith.truncf %acc : tensor<{bm}x{bn}xf32> to tensor<{bm}x{bn}x{dtype}>
  tile.store %o, %c[%m0, %n0] : tensor<{bm}x{bn}x{dtype}> -> !tile.tensor<?x?x{dtype}, ["M", "N"]>
  tile.return
}}
"""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def rel_err(out, ref) -> float:
    return float((out.float() - ref.float()).norm() / ref.float().norm())


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (37, 50, 29), (5, 70, 100), (64, 17, 3)])
def test_gemm_abt_ragged(m, n, k):
    kernel = parse_kernel(gemm_text(16, 32, 16))
    g = torch.Generator().manual_seed(m * 1000 + n * 10 + k)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16)
    b = torch.randn(n, k, generator=g).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), dtype=torch.float32)
    interpret(kernel, [a, b, c], (cdiv(m, 16), cdiv(n, 32), 1))
    ref = (a.float() @ b.float().t()).to(torch.bfloat16).float()
    assert not c.isnan().any()
    # Accumulation order differs from torch's by tile; only last-bit bf16 differences.
    assert rel_err(c, ref) < 1e-2
    torch.testing.assert_close(c, ref, atol=0.07, rtol=1e-2)


def test_gemm_exact_with_integers():
    """Small integer inputs make every product and sum exact: results must match bit for bit."""
    m, n, k = 33, 47, 40
    kernel = parse_kernel(gemm_text(16, 16, 16, trans_b=False))
    a = torch.randint(-3, 4, (m, k)).to(torch.bfloat16)
    b = torch.randint(-3, 4, (k, n)).to(torch.bfloat16)
    c = torch.zeros(m, n, dtype=torch.bfloat16)
    interpret(kernel, [a, b, c], (cdiv(m, 16), cdiv(n, 16), 1))
    assert torch.equal(c.float(), a.float() @ b.float())


def test_gemm_f16_into_bf16_dest_buffer_converts_on_store():
    kernel = parse_kernel(gemm_text(16, 16, 16, dtype="f16"))
    a = torch.randint(-2, 3, (20, 16)).to(torch.float16)
    b = torch.randint(-2, 3, (18, 16)).to(torch.float16)
    c = torch.zeros(20, 18, dtype=torch.float64)
    interpret(kernel, [a, b, c], (2, 2, 1))
    assert torch.equal(c, (a.double() @ b.double().t()))


def test_store_drops_out_of_bounds_and_keeps_untouched():
    """Instances beyond the tensor store nothing; elements outside the grid stay as they were."""
    kernel = parse_kernel(gemm_text(16, 16, 16))
    a = torch.ones(20, 16, dtype=torch.bfloat16)
    b = torch.ones(20, 16, dtype=torch.bfloat16)
    c = torch.full((20, 20), -1.0)
    interpret(kernel, [a, b, c], (1, 1, 1))  # only the first 16x16 tile
    assert torch.equal(c[:16, :16], torch.full((16, 16), 16.0))
    assert torch.equal(c[16:, :], torch.full((4, 20), -1.0))
    assert torch.equal(c[:, 16:], torch.full((20, 4), -1.0))


def test_truncf_rounds_to_bf16():
    text = """
tile.kernel @k(%x: !tile.tensor<?xf32, ["N"]>, %o: !tile.tensor<?xf32, ["N"]>) {
  %c0 = arith.constant 0 : index
  %v = tile.load %x[%c0] : !tile.tensor<?xf32, ["N"]> -> tensor<4xf32>
  %t = arith.truncf %v : tensor<4xf32> to tensor<4xbf16>
  %e = arith.extf %t : tensor<4xbf16> to tensor<4xf32>
  tile.store %e, %o[%c0] : tensor<4xf32> -> !tile.tensor<?xf32, ["N"]>
  tile.return
}
"""
    kernel = parse_kernel(text)
    x = torch.tensor([1.0 + 2**-10, 3.14159, -2.71828, 1e-3])
    o = torch.zeros(4)
    interpret(kernel, [x, o], (1, 1, 1))
    assert torch.equal(o, x.to(torch.bfloat16).float())


def test_loop_bounds_differ_per_instance():
    """Causal-style loop: instance i sums tiles 0..i; finished instances keep their values."""
    text = """
tile.kernel @prefix(%x: !tile.tensor<?x?xf32, ["R", "C"]>, %o: !tile.tensor<?x?xf32, ["R", "C"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %pid = tile.program_id x
  %row = arith.muli %pid, %c4 : index
  %end = arith.addi %pid, %c1 : index
  %ub = arith.muli %end, %c4 : index
  %zero = arith.constant dense<0.000000e+00> : tensor<4x8xf32>
  %s = scf.for %i = %c0 to %ub step %c4 iter_args(%acc = %zero) -> (tensor<4x8xf32>) {
    %t = tile.load %x[%i, %c0] : !tile.tensor<?x?xf32, ["R", "C"]> -> tensor<4x8xf32>
    %n = arith.addf %acc, %t : tensor<4x8xf32>
    scf.yield %n : tensor<4x8xf32>
  }
  tile.store %s, %o[%row, %c0] : tensor<4x8xf32> -> !tile.tensor<?x?xf32, ["R", "C"]>
  tile.return
}
"""
    kernel = parse_kernel(text)
    x = torch.randn(16, 8)
    o = torch.zeros(16, 8)
    interpret(kernel, [x, o], (4, 1, 1))
    blocks = x.view(4, 4, 8)
    ref = torch.cumsum(blocks, dim=0).reshape(16, 8)
    torch.testing.assert_close(o, ref)


def test_store_inside_loop_is_masked_for_finished_instances():
    """Instance p stores in iterations 0..p only: rows written once per live iteration."""
    text = """
tile.kernel @k(%o: !tile.tensor<?x?xf32, ["R", "C"]>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pid = tile.program_id x
  %ub = arith.addi %pid, %c1 : index
  %t = tile.splat %v : f32 -> tensor<1x4xf32>
  scf.for %i = %c0 to %ub step %c1 {
    %col = arith.muli %pid, %c1 : index
    tile.store %t, %o[%i, %col] : tensor<1x4xf32> -> !tile.tensor<?x?xf32, ["R", "C"]>
    scf.yield
  }
  tile.return
}
"""
    kernel = parse_kernel(text)
    o = torch.zeros(4, 8)
    interpret(kernel, [o, 2.5], (3, 1, 1))
    ref = torch.zeros(4, 8)
    for p in range(3):
        for i in range(p + 1):
            ref[i, p : p + 4] = 2.5
    assert torch.equal(o, ref)


def test_broadcast_splat_exp_max_select_and_index_math():
    text = """
tile.kernel @k(%x: !tile.tensor<?xf32, ["N"]>, %y: !tile.tensor<?xf32, ["M"]>,
               %o: !tile.tensor<?x?xf32, ["M", "N"]>, %s: f32, %lim: index) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %pid = tile.program_id x
  %a = arith.ceildivsi %c7, %c3 : index
  %b = arith.divsi %c7, %c3 : index
  %r = arith.remsi %c7, %c3 : index
  %t = arith.addi %a, %b : index
  %u = arith.addi %t, %r : index
  %w = arith.subi %u, %c3 : index
  %col0 = arith.muli %pid, %w : index
  %lt = arith.cmpi slt, %pid, %lim : index
  %m0 = arith.select %lt, %c0, %c3 : index
  %mx = arith.maxsi %m0, %c0 : index
  %vx = tile.load %x[%col0] : !tile.tensor<?xf32, ["N"]> -> tensor<2xf32>
  %vy = tile.load %y[%mx] : !tile.tensor<?xf32, ["M"]> -> tensor<3xf32>
  %bx = tile.broadcast %vx, 1 : tensor<2xf32> -> tensor<3x2xf32>
  %by = tile.broadcast %vy, 0 : tensor<3xf32> -> tensor<3x2xf32>
  %sum = arith.addf %bx, %by : tensor<3x2xf32>
  %ss = tile.splat %s : f32 -> tensor<3x2xf32>
  %scaled = arith.mulf %sum, %ss : tensor<3x2xf32>
  %e = math.exp2 %scaled : tensor<3x2xf32>
  %mm = arith.maximumf %e, %ss : tensor<3x2xf32>
  tile.store %mm, %o[%mx, %col0] : tensor<3x2xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
"""
    kernel = parse_kernel(text)
    # w = ceil(7/3) + 7/3 + 7%3 - 3 = 3 + 2 + 1 - 3 = 3; instance p writes columns 3p, 3p+1.
    x = torch.arange(9, dtype=torch.float32) / 4
    y = torch.arange(6, dtype=torch.float32) / 8
    o = torch.zeros(6, 9)
    s = 0.5
    interpret(kernel, [x, y, o, s, 2], (3, 1, 1))
    ref = torch.zeros(6, 9)
    for p in range(3):
        row = 0 if p < 2 else 3
        for i in range(3):
            for j in range(2):
                v = 2 ** ((x[3 * p + j] + y[row + i]) * s)
                ref[row + i, 3 * p + j] = max(float(v), s)
    torch.testing.assert_close(o, ref)


def test_program_id_order_and_3d_grid():
    text = """
tile.kernel @k(%o: !tile.tensor<?x?x?xf32, ["Z", "Y", "X"]>) {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  %c100 = arith.constant 100 : index
  %c10 = arith.constant 10 : index
  %zz = arith.muli %z, %c100 : index
  %yy = arith.muli %y, %c10 : index
  %t = arith.addi %zz, %yy : index
  %v = arith.addi %t, %x : index
  %i = arith.index_cast %v : index to i64
  %f = arith.sitofp %i : i64 to f32
  %tile = tile.splat %f : f32 -> tensor<1x1x1xf32>
  tile.store %tile, %o[%z, %y, %x] : tensor<1x1x1xf32> -> !tile.tensor<?x?x?xf32, ["Z", "Y", "X"]>
  tile.return
}
"""
    kernel = parse_kernel(text)
    o = torch.zeros(2, 3, 4)
    interpret(kernel, [o], (4, 3, 2))
    z, y, x = torch.meshgrid(torch.arange(2), torch.arange(3), torch.arange(4), indexing="ij")
    assert torch.equal(o, (100 * z + 10 * y + x).float())


def test_transpose_lhs():
    text = """
tile.kernel @k(%a: !tile.tensor<?x?xbf16, ["K", "M"]>, %b: !tile.tensor<?x?xbf16, ["K", "N"]>,
               %c: !tile.tensor<?x?xf32, ["M", "N"]>) {
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0, %c0] : !tile.tensor<?x?xbf16, ["K", "M"]> -> tensor<16x16xbf16>
  %y = tile.load %b[%c0, %c0] : !tile.tensor<?x?xbf16, ["K", "N"]> -> tensor<16x16xbf16>
  %z = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
  %d = tile.dot %x, %y, %z transpose_lhs
       : tensor<16x16xbf16>, tensor<16x16xbf16> -> tensor<16x16xf32>
  tile.store %d, %c[%c0, %c0] : tensor<16x16xf32> -> !tile.tensor<?x?xf32, ["M", "N"]>
  tile.return
}
"""
    kernel = parse_kernel(text)
    a = torch.randint(-3, 4, (10, 12)).to(torch.bfloat16)  # K=10, M=12
    b = torch.randint(-3, 4, (10, 9)).to(torch.bfloat16)  # K=10, N=9
    c = torch.zeros(12, 9)
    interpret(kernel, [a, b, c], (1, 1, 1))
    assert torch.equal(c, a.float().t() @ b.float() + 1)


def test_examples_gemm_parses_and_runs_tiny():
    """The shipped example (128x256 tiles) on a small ragged problem."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "examples" / "gemm.mlir").read_text()
    kernel = parse_kernel(text)
    a = torch.randint(-2, 3, (130, 70)).to(torch.bfloat16)
    b = torch.randint(-2, 3, (260, 70)).to(torch.bfloat16)
    c = torch.zeros(130, 260)
    interpret(kernel, [a, b, c], (2, 2, 1))
    assert torch.equal(c, a.float() @ b.float().t())


def test_unsupported_op_raises():
    text = """
tile.kernel @k(%o: !tile.tensor<?xf32, ["N"]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %i = arith.constant 1 : i32
  %s = arith.bitcast %i : i32 to f32
  tile.return
}
"""
    kernel = parse_kernel(text)
    with pytest.raises(InterpretError, match="arith.bitcast"):
        interpret(kernel, [torch.zeros(4)], (1, 1, 1))


def test_dot_flops_counts_live_instances_and_iterations():
    kernel = parse_kernel(gemm_text(16, 32, 16))
    a = torch.zeros(40, 33, dtype=torch.bfloat16)
    b = torch.zeros(64, 33, dtype=torch.bfloat16)
    c = torch.zeros(40, 64)
    stats = interpret(kernel, [a, b, c], (3, 2, 1))
    # 6 instances, each 3 k-steps (K=33, step 16) of a 16x32x16 dot.
    assert stats["dot_flops"] == 6 * 3 * 2 * 16 * 32 * 16


def test_row_softmax_reductions():
    """tile.reduce max/sum along rows with row-vector broadcasts: a softmax per tile."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent / "data" / "row_softmax.mlir").read_text()
    kernel = parse_kernel(text)
    m, n, k = 130, 256, 70
    torch.manual_seed(0)
    a = torch.randn(m, k).to(torch.bfloat16)
    b = torch.randn(n, k).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"))
    interpret(kernel, [a, b, c, 0.25], (2, 2, 1))
    s = 0.25 * (a.float() @ b.float().T)
    # exp2(s - max) / sum: a base-2 softmax of s, i.e. the natural softmax of s * ln 2
    ref = torch.cat(
        [torch.softmax(s[:, j : j + 128] * 0.6931471805599453, 1) for j in (0, 128)], dim=1
    )
    assert torch.allclose(c, ref, atol=1e-5, rtol=1e-4)


def test_attention_example_matches_softmax_attention():
    """examples/attention.mlir (rank-4 loads and stores, online softmax) on the interpreter."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "examples" / "attention.mlir").read_text()
    kernel = parse_kernel(text)
    b, h, s, d = 1, 2, 256, 128
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d).to(torch.bfloat16) for _ in range(3))
    o = torch.full((b, h, s, d), float("nan"), dtype=torch.bfloat16)
    scale = d**-0.5
    interpret(kernel, [q, k, v, o, scale * 1.4426950408889634], (s // 128, h, b))
    ref = torch.softmax(q.float() @ k.float().transpose(-1, -2) * scale, -1) @ v.float()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err


def test_causal_attention_example_matches_masked_softmax():
    """examples/attention_causal.mlir: loop bound from the program id, diagonal mask."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "attention_causal.mlir"
    kernel = parse_kernel(path.read_text())
    b, h, s, d = 1, 2, 384, 128
    torch.manual_seed(1)
    q, k, v = (torch.randn(b, h, s, d).to(torch.bfloat16) for _ in range(3))
    o = torch.full((b, h, s, d), float("nan"), dtype=torch.bfloat16)
    scale = d**-0.5
    interpret(kernel, [q, k, v, o, scale * 1.4426950408889634], (s // 128, h, b))
    scores = q.float() @ k.float().transpose(-1, -2) * scale
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    ref = torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v.float()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, err
