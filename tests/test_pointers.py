"""Pointer arithmetic read as blocks of tensors (`tawac.analysis.pointers`): the tutorial
matmul's loads and store, and what is refused, where."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawac.analysis.pointers import PointerError, Poly, Range, accesses
from tawac.dialects import tt
from tawac.ir.ttir import parse_ttir, read_ttir

REPO = Path(__file__).resolve().parent.parent
PRE = REPO / "examples/triton/attention_bwd_preprocess.ttir"


def _func(module) -> tt.FuncOp:
    return next(o for o in module.walk() if isinstance(o, tt.FuncOp))


def _blocks(module) -> list[tuple[str, str, list[tuple[str, str]]]]:
    return [
        (a.op.name, a.base.name_hint, [(str(d.stride), str(d.origin)) for d in a.dims])
        for a in accesses(_func(module))
    ]


def test_the_tutorial_matmul_reads_as_three_blocks():
    """A at (pid_m * 128, k * 64) with strides (stride_am, stride_ak), B at (k * 64,
    pid_n * 256), C at (pid_m * 128, pid_n * 256); the grouped order's pid_m is
    8 * group_id + (pid % group) % group_size, pid_n an opaque symbol; the rows of A and
    the columns of B wrap `% M`, `% N`."""
    module = read_ttir(REPO / "examples/triton/matmul.ttir")
    a, b, c = _blocks(module)
    assert a == ("tt.load", "a_ptr", [("stride_am", "1024*group_id + 128*pid_m"),
                                      ("stride_ak", "64*k")])  # fmt: skip
    assert b == ("tt.load", "b_ptr", [("stride_bk", "64*k"), ("stride_bn", "256*pid_n")])
    assert c == ("tt.store", "c_ptr", [("stride_cm", "1024*group_id + 128*pid_m"),
                                       ("stride_cn", "256*pid_n")])  # fmt: skip
    wraps = [[w.name_hint for w in x.wraps] for x in accesses(_func(module))]
    assert wraps == [["offs_am"], ["offs_bn"], []]


def test_the_tutorial_matmul_masks_and_wraps_give_the_sizes():
    """A's rows wrap % M and its K columns are masked < K; B's K rows masked, its columns
    wrap % N; C masked < M and < N on its two dimensions."""
    module = read_ttir(REPO / "examples/triton/matmul.ttir")

    def sizes(a):
        return [
            (str(d.bound) if d.bound is not None else None, d.wrap.name_hint if d.wrap else None)
            for d in a.dims
        ]

    a, b, c = accesses(_func(module))
    assert sizes(a) == [(None, "M"), ("K", None)]
    assert sizes(b) == [("K", None), (None, "N")]
    assert sizes(c) == [("M", None), ("N", None)]


def test_poly_arithmetic():
    r0 = Poly.sym(Range(0))
    assert str((r0 + Poly.const(3)) * Poly.const(2)) == "6 + 2*range0"
    with pytest.raises(PointerError, match="two index ranges"):
        _ = r0 * Poly.sym(Range(1))
    assert str(r0 - r0) == "0"


def _kernel(body: str, extra_args: str = "") -> str:
    return (
        "module {\n"
        f"  tt.func public @k(%p: !tt.ptr<f32>, %s: i32{extra_args}) {{\n"
        "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>\n"
        "    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>\n"
        f"{body}"
        "    tt.return\n  }\n}\n"
    )


def test_a_unit_stride_row_with_a_program_offset():
    body = (
        "    %pid = tt.get_program_id x : i32\n"
        "    %c64 = arith.constant 64 : i32\n"
        "    %o = arith.muli %pid, %c64 : i32\n"
        "    %os = tt.splat %o : i32 -> tensor<64xi32>\n"
        "    %i = arith.addi %os, %r : tensor<64xi32>\n"
        "    %q = tt.addptr %ps, %i : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
        "    %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n"
    )
    ((_, base, dims),) = _blocks(parse_ttir(_kernel(body), "k.ttir"))
    assert base == "p" and dims == [("1", "64*pid_x")]


def test_a_constant_row_stride_takes_the_terms_it_divides():
    """Rows of a constexpr length (the attention preprocessing's `O + off_hz * HEAD_DIM *
    N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :]`): the origin's terms that the
    constant row stride divides go to the rows (`off_hz * N_CTX` rows and the program's
    `pid * 128`), the others to the unit stride."""
    module = parse_ttir(PRE.read_text(), str(PRE))
    loads = [a for a in accesses(_func(module)) if a.op.name == "tt.load"]
    assert [(str(d.stride), str(d.origin)) for d in loads[0].dims] == [
        ("64", "N_CTX*pid_y + 128*pid_x"),
        ("1", "0"),
    ]
    assert not loads[0].outer


@pytest.mark.parametrize(
    ("body", "message", "at"),
    [
        # the index times itself: a product of two ranges
        ("    %i = arith.muli %r, %r : tensor<64xi32>\n"
         "    %q = tt.addptr %ps, %i : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
         "    %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n",
         "a product of two index ranges", "arith.muli"),
        # a stride that is a sum: (s + 1) * range
        ("    %c1 = arith.constant 1 : i32\n"
         "    %t = arith.addi %s, %c1 : i32\n"
         "    %ts = tt.splat %t : i32 -> tensor<64xi32>\n"
         "    %i = arith.muli %r, %ts : tensor<64xi32>\n"
         "    %q = tt.addptr %ps, %i : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
         "    %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n",
         "has the stride", "tt.load"),
        # no index range at all: every element at one address
        ("    %z = tt.splat %s : i32 -> tensor<64xi32>\n"
         "    %q = tt.addptr %ps, %z : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
         "    %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n",
         "does not move", "tt.load"),
        # an index tensor from a division
        ("    %c2 = arith.constant dense<2> : tensor<64xi32>\n"
         "    %i = arith.divsi %r, %c2 : tensor<64xi32>\n"
         "    %q = tt.addptr %ps, %i : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
         "    %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n",
         "an index tensor computed by arith.divsi", "arith.divsi"),
    ],
)  # fmt: skip
def test_what_is_not_a_block_is_refused_at_its_op(body, message, at):
    module = parse_ttir(_kernel(body), "k.ttir")
    with pytest.raises(PointerError, match=message) as err:
        accesses(_func(module))
    assert err.value.op is not None and err.value.op.name == at


def test_a_mask_on_a_scaled_index_is_refused():
    body = (
        "    %c2 = arith.constant dense<2> : tensor<64xi32>\n"
        "    %i = arith.muli %r, %c2 : tensor<64xi32>\n"
        "    %q = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
        "    %ss = tt.splat %s : i32 -> tensor<64xi32>\n"
        "    %m = arith.cmpi slt, %i, %ss : tensor<64xi32>\n"
        "    %v = tt.load %q, %m : tensor<64x!tt.ptr<f32>>\n"
    )
    module = parse_ttir(_kernel(body), "k.ttir")
    with pytest.raises(PointerError, match="scaled index") as err:
        accesses(_func(module))
    assert err.value.op.name == "arith.cmpi"


def test_a_loop_carried_pointer_advanced_by_the_loop_variable_is_refused():
    body = (
        "    %c0 = arith.constant 0 : i32\n"
        "    %c1 = arith.constant 1 : i32\n"
        "    %q0 = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
        "    %out = scf.for %k = %c0 to %s step %c1 iter_args(%q = %q0) -> "
        "(tensor<64x!tt.ptr<f32>>) : i32 {\n"
        "      %v = tt.load %q : tensor<64x!tt.ptr<f32>>\n"
        "      %ks = tt.splat %k : i32 -> tensor<64xi32>\n"
        "      %q1 = tt.addptr %q, %ks : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
        "      scf.yield %q1 : tensor<64x!tt.ptr<f32>>\n"
        "    }\n"
    )
    module = parse_ttir(_kernel(body), "k.ttir")
    with pytest.raises(PointerError, match="loop-variant offset"):
        accesses(_func(module))
