"""Reading Triton's TTIR: the `tt` dialect, the tensor comparisons
of arith, location aliases printed after the module, and the Python line of each op."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tawac.dialects import tt
from tawac.ir.ttir import hoist_aliases, parse_ttir, python_location, read_ttir
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
MATMUL = REPO / "examples/triton/matmul.ttir"


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_the_tutorial_matmul_parses_and_verifies():
    module = read_ttir(MATMUL)
    ops = Counter(o.name for o in module.walk())
    assert ops["tt.func"] == 1 and ops["tt.dot"] == 1 and ops["scf.for"] == 1
    assert ops["tt.load"] == 2 and ops["tt.store"] == 1 and ops["tt.addptr"] == 6
    assert ops["arith.cmpi"] == 4  # masks: compared on tensors
    func = next(o for o in module.walk() if isinstance(o, tt.FuncOp))
    assert func.sym_name.data == "matmul_kernel" and func.sym_visibility.data == "public"
    args = func.body.block.args
    assert isinstance(args[0].type, tt.PointerType) and str(args[3].type) == "i32"
    (dot,) = [o for o in module.walk() if isinstance(o, tt.DotOp)]
    assert str(dot.result.type) == "tensor<128x256xf32>"
    assert dot.input_precision is not None and dot.input_precision.data == "tf32"
    loads = [o for o in module.walk() if isinstance(o, tt.LoadOp)]
    assert all(ld.mask is not None and ld.other is not None for ld in loads)
    assert [str(ld.result.type) for ld in loads] == ["tensor<128x64xf16>", "tensor<64x256xf16>"]


def test_each_op_knows_its_python_line():
    module = read_ttir(MATMUL)
    py = REPO / "examples/triton/matmul.py"
    where = {o.name: python_location(o) for o in module.walk()}
    assert where["tt.dot"].startswith(f"examples/triton/matmul.py:{_line_of(py, 'tl.dot(')}:")
    assert where["tt.store"].startswith(f"examples/triton/matmul.py:{_line_of(py, 'tl.store(')}:")
    pid = _line_of(py, "tl.program_id")
    assert where["tt.get_program_id"] == f"examples/triton/matmul.py:{pid}:24"
    # tl.cdiv's constants come from Triton's library, called from the kernel: the call
    cdiv = _line_of(py, "for k in range")
    consts = [python_location(o) for o in module.walk() if o.name == "arith.constant"]
    assert f"examples/triton/matmul.py:{cdiv}:33" in consts


def test_printed_ttir_parses_again():
    module = read_ttir(MATMUL)
    again = parse_ttir(str(module), "printed.ttir")
    assert str(again) == str(module)


def test_aliases_printed_after_the_module_are_moved_first():
    text = 'module {\n} loc(#loc2)\n#loc1 = loc("k.py":3:4)\n#loc2 = loc("x"(#loc1))\n'
    hoisted = hoist_aliases(text)
    assert hoisted.splitlines()[0].startswith('#loc1 = loc("k.py":3:4) #loc2 = loc("x"(#loc1))')
    assert len(hoisted.splitlines()) == len(text.splitlines()) - 1  # same lines, one joined
    parse_ttir(text, "k.ttir")


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("%0 = tt.get_program_id w : i32", "expected an axis x, y or z, got 'w'", 3),
        ("%0 = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<4xi32>",
         "tt.make_range of 8 values has type tensor<4xi32>", 2),
        ("%0 = tt.frobnicate : i32", "tt.frobnicate", 3),
    ],
)  # fmt: skip
def test_bad_ttir_is_one_located_error(body, message, line):
    text = f"module {{\n  tt.func public @k() {{\n    {body}\n    tt.return\n  }}\n}}\n"
    with pytest.raises(CompileError) as err:
        parse_ttir(text, "bad.ttir")
    assert message in err.value.message
    assert err.value.location.startswith("bad.ttir")
    if err.value.location != "bad.ttir":
        assert err.value.location.split(":")[1] == str(line)


def test_an_op_that_does_not_verify_is_located_at_its_python_line():
    text = (
        "module {\n  tt.func public @k() {\n"
        "    %0 = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<4xi32> loc(#l)\n"
        '    tt.return\n  }\n}\n#l = loc("k.py":7:9)\n'
    )
    with pytest.raises(CompileError) as err:
        parse_ttir(text, "bad.ttir")
    assert str(err.value) == "k.py:7:9: error: tt.make_range of 8 values has type tensor<4xi32>"


def test_pointer_types_and_tensor_comparisons_print_as_triton_does():
    text = (
        "module {\n  tt.func public @k(%p: !tt.ptr<f32>, %n: i32) {\n"
        "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>\n"
        "    %s = tt.splat %n : i32 -> tensor<64xi32>\n"
        "    %m = arith.cmpi slt, %r, %s : tensor<64xi32>\n"
        "    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>\n"
        "    %q = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>\n"
        "    %v = tt.load %q, %m : tensor<64x!tt.ptr<f32>>\n"
        "    %z = arith.constant dense<0.0> : tensor<64xf32>\n"
        "    %w = arith.select %m, %v, %z : tensor<64xi1>, tensor<64xf32>\n"
        "    tt.store %q, %w, %m : tensor<64x!tt.ptr<f32>>\n"
        "    tt.return\n  }\n}\n"
    )
    module = parse_ttir(text, "k.ttir")
    printed = str(module)
    for piece in (
        "%m = arith.cmpi slt, %r, %s : tensor<64xi32>",
        "tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>",
        "%v = tt.load %q, %m : tensor<64x!tt.ptr<f32>>",
        "arith.select %m, %v, %z : tensor<64xi1>, tensor<64xf32>",
        "tt.store %q, %w, %m : tensor<64x!tt.ptr<f32>>",
    ):
        assert piece in printed
    cmp = next(o for o in module.walk() if isinstance(o, tt.CmpiOp))
    assert str(cmp.result.type) == "tensor<64xi1>" and cmp.predicate_name == "slt"
    assert str(module) == str(parse_ttir(printed, "again.ttir"))


def test_reduce_and_trans_parse_and_print_back():
    text = (
        "module {\n  tt.func public @k(%x: tensor<64x128xf32>) {\n"
        '    %m = "tt.reduce"(%x) <{axis = 1 : i32}> ({\n'
        "    ^bb0(%a: f32, %b: f32):\n"
        "      %t = arith.maxnumf %a, %b : f32\n"
        "      tt.reduce.return %t : f32\n"
        "    }) : (tensor<64x128xf32>) -> tensor<64xf32>\n"
        "    %t2 = tt.trans %x {order = array<i32: 1, 0>} : tensor<64x128xf32> -> "
        "tensor<128x64xf32>\n"
        "    tt.return\n  }\n}\n"
    )
    module = parse_ttir(text, "k.ttir")
    (red,) = [o for o in module.walk() if isinstance(o, tt.ReduceOp)]
    assert red.axis.value.data == 1 and red.combiner().name == "arith.maxnumf"
    assert str(parse_ttir(str(module), "again.ttir")) == str(module)
    assert any(isinstance(o, tt.TransOp) for o in module.walk())
