"""`convert-ttir`: the Triton tutorial's matmul as a tile kernel, checked
against torch on the CPU interpreter at ragged sizes, compiled to a cubin, and the
programs it refuses, at their Python line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_inprocess import tawac
from gpu_util import requires_gpu
from xdsl.ir import Operation

from tawac.compiler import compile_module, parse_file, parse_text
from tawac.dialects import tile
from tawac.runtime.interpret import interpret
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
MATMUL = REPO / "examples/triton/matmul.ttir"


def _kernel(module) -> tile.KernelOp:
    return next(o for o in module.walk() if isinstance(o, tile.KernelOp))


def test_the_tutorial_matmul_becomes_a_tile_gemm():
    k = _kernel(parse_file(MATMUL))
    assert [str(a.type) for a in k.body.block.args] == [
        '!tile.tensor<?x?xf16, ["M", "K"]>',
        '!tile.tensor<?x?xf16, ["K", "N"]>',
        '!tile.tensor<?x?xf16, ["M", "N"]>',
    ]
    names = [o.name for o in k.walk()]
    # the grouped program order became a 2-d grid: tawac picks its own tile order
    assert names.count("tile.program_id") == 2
    assert names.count("tile.load") == 2 and names.count("tile.dot") == 1
    assert names.count("tile.store") == 1 and names.count("scf.for") == 1
    assert not any(n.startswith("tt.") for n in names)
    loop = next(o for o in k.walk() if o.name == "scf.for")
    assert len(loop.iter_args) == 1  # the pointers are gone, the accumulator stays
    assert str(loop.step.owner.value.value.data) == "64"


@pytest.mark.parametrize(("m", "n", "k"), [(200, 300, 130), (128, 256, 64), (1, 17, 1000)])
def test_the_converted_matmul_computes_a_times_b(m, n, k):
    kernel = _kernel(parse_file(MATMUL))
    torch.manual_seed(0)
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    interpret(kernel, [a, b, c], (-(-m // 128), -(-n // 256), 1))
    ref = a.float() @ b.float()
    assert not torch.isnan(c).any()
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


@pytest.mark.parametrize("name", ["matmul", "matmul_leaky_relu", "matmul_epilogue"])
def test_the_converted_matmul_assembles_without_spills(name):
    res = compile_module(parse_file(REPO / f"examples/triton/{name}.ttir"), cubin=True)
    assert "0 bytes spill stores" in res.ptxas_report
    assert "C75" not in res.ptxas_report
    assert res.sidecar["kernel"] == name.replace("_leaky_relu", "") + "_kernel"


def test_tawac_compile_reads_ttir(tmp_path):
    out = tmp_path / "m.ptx"
    cmd = ["compile", str(MATMUL), "-o", str(out)]
    proc = tawac(cmd)
    assert proc.returncode == 0, proc.stderr
    assert "wgmma.mma_async" in out.read_text()
    bad = tawac([*cmd, "-D", "BLOCK=64"])
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "constexprs" in bad.stderr.strip().splitlines()[-1]


_HEAD = (
    "module {\n"
    "  tt.func public @k(%p: !tt.ptr<f16> loc(#a), %n: i32 loc(#a)) {\n"
    "    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32> loc(#a)\n"
    "    %ps = tt.splat %p : !tt.ptr<f16> -> tensor<64x!tt.ptr<f16>> loc(#a)\n"
    "    %pid = tt.get_program_id x : i32 loc(#a)\n"
    "    %c64 = arith.constant 64 : i32 loc(#a)\n"
)
_TAIL = (
    '    tt.return loc(#a)\n  } loc(#a)\n} loc(#a)\n#a = loc("k.py":1:0)\n#b = loc("k.py":9:5)\n'
)


def _ttir(body: str) -> str:
    return _HEAD + body + _TAIL


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # a program order that is not a permutation: pid % 2 tiles, stored twice
        ("    %c2 = arith.constant 2 : i32 loc(#a)\n"
         "    %q = arith.remsi %pid, %c2 : i32 loc(#a)\n"
         "    %o = arith.muli %q, %c64 : i32 loc(#a)\n"
         "    %os = tt.splat %o : i32 -> tensor<64xi32> loc(#a)\n"
         "    %i = arith.addi %os, %r : tensor<64xi32> loc(#a)\n"
         "    %q2 = tt.addptr %ps, %i : tensor<64x!tt.ptr<f16>>, tensor<64xi32> loc(#a)\n"
         "    %ns = tt.splat %n : i32 -> tensor<64xi32> loc(#a)\n"
         "    %m = arith.cmpi slt, %i, %ns : tensor<64xi32> loc(#a)\n"
         "    %z = arith.constant dense<0.0> : tensor<64xf16> loc(#a)\n"
         "    tt.store %q2, %z, %m : tensor<64x!tt.ptr<f16>> loc(#b)\n",
         "not a permutation of the tile grid"),
        # a store masked by a constant: TMA clips at a tensor's sizes, which are arguments
        ("    %o = arith.muli %pid, %c64 : i32 loc(#a)\n"
         "    %os = tt.splat %o : i32 -> tensor<64xi32> loc(#a)\n"
         "    %i = arith.addi %os, %r : tensor<64xi32> loc(#a)\n"
         "    %q2 = tt.addptr %ps, %i : tensor<64x!tt.ptr<f16>>, tensor<64xi32> loc(#a)\n"
         "    %c100 = arith.constant dense<100> : tensor<64xi32> loc(#a)\n"
         "    %m = arith.cmpi slt, %i, %c100 : tensor<64xi32> loc(#a)\n"
         "    %z = arith.constant dense<0.0> : tensor<64xf16> loc(#a)\n"
         "    tt.store %q2, %z, %m : tensor<64x!tt.ptr<f16>> loc(#b)\n",
         "a mask bound 100 that is not a size argument"),
    ],
)  # fmt: skip
def test_refused_programs_are_one_error_at_the_python_line(body, message):
    with pytest.raises(CompileError) as err:
        parse_text(_ttir(body), "k.ttir")
    assert message in err.value.message
    assert err.value.location == "k.py:9:5"


EPILOGUE = REPO / "examples/triton/matmul_epilogue.ttir"


def test_a_fused_epilogue_converts_and_computes():
    """relu(A @ B + bias[None, :]) + R: the bias a 1-d tensor broadcast over the rows
    (`tile.broadcast`), `tl.maximum(x, 0.0)` (arith.maxnumf), the residual a second 2-d
    load of the output's block."""
    kernel = _kernel(parse_file(EPILOGUE))
    args = {a.name_hint: str(a.type) for a in kernel.body.block.args}
    assert args["bias"] == '!tile.tensor<?xf32, ["N"]>'
    assert args["r"] == '!tile.tensor<?x?xf16, ["M", "N"]>'
    names = [o.name for o in kernel.walk()]
    assert "tile.broadcast" in names and "arith.maxnumf" in names
    torch.manual_seed(0)
    m, n, k = 200, 300, 130
    t = {
        "a": torch.randn(m, k, dtype=torch.float16),
        "b": torch.randn(k, n, dtype=torch.float16),
        "c": torch.full((m, n), float("nan"), dtype=torch.float16),
        "bias": torch.randn(n),
        "r": torch.randn(m, n, dtype=torch.float16),
    }
    interpret(kernel, [t[a.name_hint] for a in kernel.body.block.args], (2, 2, 1))
    ref = torch.relu(t["a"].float() @ t["b"].float() + t["bias"][None, :]) + t["r"].float()
    assert ((t["c"].float() - ref).abs().max() / ref.abs().max()).item() < 2e-3
    res = compile_module(parse_file(EPILOGUE), cubin=True)
    assert "0 bytes spill stores" in res.ptxas_report and "C75" not in res.ptxas_report


def test_the_epilogue_keeps_a_three_slot_ring_and_stages_in_chunks():
    """The residual's 64 KiB slot and a whole 64 KiB staging tile would leave the 128x256
    GEMM's operand ring 2 slots; staging in one 64-column chunk leaves it 3, which
    measured 1.05-1.16x faster on the H100 (docs/perf/2026-11-26.md)."""
    from tawac.support.options import PipelineOptions
    from tawac.tools.explain import explain_module

    info = explain_module(parse_file(EPILOGUE), PipelineOptions())
    assert info["stages"] == 3
    assert info["stores"] == [{"name": "c", "staging": "chunks", "buffers": 1}]


def test_tawac_torch_takes_a_ttir_source(monkeypatch):
    """`tawac.torch.kernel` of a `.ttir` is a PyTorch operator like any other: compiled
    through the cache, its pure output (C) allocated and returned (the launch faked)."""
    import tawac.torch as tt

    launched = []

    class Fake:
        def __init__(self, cubin, sidecar):
            self.sidecar = sidecar

        def __call__(self, *args, stream=None):
            launched.append(args)

    monkeypatch.setattr(tt, "load_kernel", Fake)
    monkeypatch.setattr(tt, "DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    k = tt.kernel(str(EPILOGUE))
    a = torch.zeros(300, 130, dtype=torch.float16)
    b = torch.zeros(130, 200, dtype=torch.float16)
    bias = torch.zeros(200)
    r = torch.zeros(300, 200, dtype=torch.float16)
    c = k(a, b, bias, r)
    assert c.shape == (300, 200) and c.dtype == torch.float16
    ((la, lb, lc, lbias, lr),) = launched
    assert la is a and lb is b and lc is c and lbias is bias and lr is r


@pytest.mark.gpu
@requires_gpu
def test_triton_epilogue_on_the_gpu_eager_graph_and_compiled():
    """The converted Triton epilogue through `tawac.torch` on the GPU: correct at a ragged
    size eagerly, replayed in a CUDA graph, and inside `torch.compile(fullgraph=True)`."""
    import tawac.torch as tt

    k = tt.kernel(str(EPILOGUE))
    torch.manual_seed(0)
    m, n, kk = 1000, 600, 320
    a = torch.randn(m, kk, device="cuda", dtype=torch.float16)
    b = torch.randn(kk, n, device="cuda", dtype=torch.float16)
    bias = torch.randn(n, device="cuda")
    r = torch.randn(m, n, device="cuda", dtype=torch.float16)
    ref = torch.relu(a.float() @ b.float() + bias) + r.float()

    def close(c):
        return ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3

    assert close(k(a, b, bias, r))
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    k(a, b, c, bias, r)  # in place, the kernel's order; a warm-up outside the capture
    c.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k(a, b, c, bias, r)
    graph.replay()
    torch.cuda.synchronize()
    assert close(c)
    f = torch.compile(lambda *x: k(*x) * 1.0, fullgraph=True)
    assert close(f(a, b, bias, r))


_ROW_SUM = """module {
  tt.func public @row_sum(%x_ptr: !tt.ptr<f32>, %y_ptr: !tt.ptr<f32>, %n: i32, %m: i32) {
    %zero = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
    %c64 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %o = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %os = tt.splat %o : i32 -> tensor<64xi32>
    %rows = arith.addi %os, %r : tensor<64xi32>
    %cols = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %r2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ns = tt.splat %n : i32 -> tensor<64x1xi32>
    %roff = arith.muli %r2, %ns : tensor<64x1xi32>
    %xs = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %xr = tt.addptr %xs, %roff : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %c2 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %xb = tt.broadcast %xr : tensor<64x1x!tt.ptr<f32>> -> tensor<64x128x!tt.ptr<f32>>
    %cb = tt.broadcast %c2 : tensor<1x128xi32> -> tensor<64x128xi32>
    %p = tt.addptr %xb, %cb : tensor<64x128x!tt.ptr<f32>>, tensor<64x128xi32>
    %nc = tt.splat %n : i32 -> tensor<1x128xi32>
    %cm = arith.cmpi slt, %c2, %nc : tensor<1x128xi32>
    %ms = tt.splat %m : i32 -> tensor<64x1xi32>
    %rm = arith.cmpi slt, %r2, %ms : tensor<64x1xi32>
    %cmb = tt.broadcast %cm : tensor<1x128xi1> -> tensor<64x128xi1>
    %rmb = tt.broadcast %rm : tensor<64x1xi1> -> tensor<64x128xi1>
    %mask = arith.andi %rmb, %cmb : tensor<64x128xi1>
    %x = tt.load %p, %mask, %zero : tensor<64x128x!tt.ptr<f32>>
    %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<64x128xf32>) -> tensor<64xf32>
    %ys = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %rows : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %ms1 = tt.splat %m : i32 -> tensor<64xi32>
    %ym = arith.cmpi slt, %rows, %ms1 : tensor<64xi32>
    tt.store %yp, %s, %ym : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_a_row_sum_converts_to_tile_reduce():
    """`tl.sum(x, axis=1)` of a masked 2-d load (other 0) -> `tile.reduce sum`, its rows
    stored by a masked 1-d store; checked against torch on the interpreter."""
    kernel = _kernel(parse_text(_ROW_SUM, "row_sum.ttir"))
    assert [str(a.type) for a in kernel.body.block.args] == [
        '!tile.tensor<?x?xf32, ["m", "n"]>',
        '!tile.tensor<?xf32, ["m"]>',
    ]
    assert "tile.reduce" in [o.name for o in kernel.walk()]
    x = torch.randn(100, 90)
    y = torch.full((100,), float("nan"))
    interpret(kernel, [x, y], (2, 1, 1))
    assert torch.allclose(y, x.sum(1), rtol=1e-4, atol=1e-4)


def _mutant(text: str, rng) -> str:
    """One random edit of a `.ttir`'s body: a line deleted, two lines swapped, a number
    changed, a value renamed, or an op replaced by another."""
    import re

    lines = text.split("\n")
    body = [i for i, line in enumerate(lines) if line.startswith("    ")]
    i = rng.choice(body)
    kind = rng.randrange(5)
    if kind == 0:
        lines[i] = ""
    elif kind == 1:
        j = rng.choice(body)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 2:
        nums = list(re.finditer(r"\b\d+\b", lines[i]))
        if nums:
            m = rng.choice(nums)
            new = str(rng.choice([0, 1, 2, 63, 64, 127, 128, 256, 1024]))
            lines[i] = lines[i][: m.start()] + new + lines[i][m.end() :]
    elif kind == 3:
        names = list(re.finditer(r"%\w+", lines[i]))
        if names:
            m = rng.choice(names)
            new = rng.choice(re.findall(r"%\w+", text))
            lines[i] = lines[i][: m.start()] + new + lines[i][m.end() :]
    else:
        ops = ["arith.addi", "arith.muli", "arith.remsi", "arith.divsi", "tt.splat",
               "tt.broadcast", "arith.addf", "arith.mulf", "arith.maxnumf"]  # fmt: skip
        for op in ops:
            if op in lines[i]:
                lines[i] = lines[i].replace(op, rng.choice(ops), 1)
                break
    return "\n".join(lines)


def test_mutated_ttir_gives_a_located_error_or_a_kernel():
    """Mutants of the shipped `.ttir` files (fixed seed): each converts or is one
    `CompileError`, never an internal error (found: a division by zero in a program
    order, a value used before its definition, a type's check while parsing, a float
    constant out of its type's range)."""
    import random

    rng = random.Random(20261126)
    sources = [p.read_text() for p in sorted((REPO / "examples/triton").glob("*.ttir"))]
    assert len(sources) >= 4
    outcomes = {"kernel": 0, "error": 0}
    for _ in range(100):
        text = _mutant(rng.choice(sources), rng)
        try:
            parse_text(text, "mutant.ttir")
            outcomes["kernel"] += 1
        except CompileError as e:
            assert "\n" not in str(e)
            outcomes["error"] += 1
    assert outcomes["kernel"] and outcomes["error"]


def test_a_float_constant_out_of_range_is_one_located_error():
    """Found by a mutant of attention.ttir: `dense<1.0e+128> : tensor<128xf32>` (xDSL
    packs floats with `struct`, which overflows)."""
    text = (REPO / "examples/triton/attention.ttir").read_text()
    bad = text.replace("dense<1.000000e+00> : tensor<128xf32>", "dense<1.0e+128> : tensor<128xf32>")
    assert bad != text
    with pytest.raises(CompileError) as err:
        parse_text(bad, "a.ttir")
    assert "value out of range for its type" in err.value.message
    assert str(err.value.location).startswith("a.ttir:")


@pytest.mark.parametrize("elem", ["i1", "i8", "i64"])
def test_a_tensor_of_an_unsupported_element_type_is_one_located_error(elem):
    """Found by the fuzzer (seed 25): the fp8 GEMM's f8E4M3FN retyped as i1 made a
    `!tile.tensor` of i1, whose constructor raised an internal error."""
    text = (REPO / "tests/data/triton/matmul_fp8.ttir").read_text()
    bad = text.replace("f8E4M3FN", elem)
    assert bad != text
    with pytest.raises(CompileError) as err:
        parse_text(bad, "k.ttir")
    assert "element type" in err.value.message and elem in err.value.message
    assert err.value.message.startswith("convert-ttir: ")
    assert str(err.value.location).startswith("tests/data/triton/matmul_fp8.py:") or str(
        err.value.location
    ).startswith("k.ttir"), err.value.location


LEAKY = REPO / "examples/triton/matmul_leaky_relu.ttir"


def test_the_tutorial_leaky_relu_matches_torch():
    """The tutorial matmul's fused activation, `tl.where(x >= 0, x, 0.01 * x)`: a float
    comparison and a select of tiles (arith.cmpf / arith.select as tile programs write
    them), on the interpreter at a ragged size."""
    kernel = _kernel(parse_file(LEAKY))
    names = [o.name for o in kernel.walk()]
    assert "arith.cmpf" in names and "arith.select" in names
    torch.manual_seed(2)
    m, n, k = 200, 300, 130
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    interpret(kernel, [a, b, c], (-(-m // 128), -(-n // 256), 1))
    x = a.float() @ b.float()
    ref = torch.where(x >= 0, x, 0.01 * x)
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


@pytest.mark.gpu
@requires_gpu
def test_the_tutorial_leaky_relu_on_the_gpu():
    from tawac.triton import from_ttir

    kern = from_ttir(LEAKY.read_text(), str(LEAKY))
    torch.manual_seed(0)
    m, n, k = 1000, 3000, 700
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kern[(1,)](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())
    torch.cuda.synchronize()
    x = a.float() @ b.float()
    ref = torch.where(x >= 0, x, 0.01 * x)
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-3


def test_an_unclosed_string_in_ttir_is_an_error_not_a_hang():
    """Found by the fuzzer once it took `.ttir` files: a stray `"` inside a TTIR op
    (`tt.broadc"ast ...`) made xDSL's string-literal regex backtrack for minutes. TTIR is
    now read with tawac's lexer (linear-time strings, bounded numbers), as `.mlir` is."""
    import time

    text = (REPO / "tests/data/triton/unseen_block_ptr_gelu.ttir").read_text()
    assert "tt.broadcast %a_44" in text
    bad = text.replace("tt.broadcast %a_44", 'tt.broadc"ast %a_44', 1)
    start = time.monotonic()
    with pytest.raises(CompileError, match="string literal not closed on its line"):
        parse_text(bad, "mutant.ttir")
    assert time.monotonic() - start < 10
    long = text.replace("%c64_i32 = arith.constant 64", "%c64_i32 = arith.constant " + "6" * 500)
    with pytest.raises(CompileError, match="number literal of 500 characters"):
        parse_text(long, "mutant.ttir")


def test_a_dense_splat_of_a_huge_tensor_in_ttir_is_one_located_error():
    """Found by the fuzzer (seed 19): a divisibility hint `dense<128> :
    tensor<9223372036854775807xi32>` made xDSL expand the splat to that many values (a
    MemoryError, reported as an internal error). TTIR's shaped types now have the
    `.mlir` reader's bounds, checked before a splat is expanded."""
    text = (REPO / "examples/triton/attention_causal.ttir").read_text()
    good = "{tt.divisibility = dense<128> : tensor<1xi32>}"
    assert good in text
    bad = text.replace(good, "{tt.divisibility = dense<128> : tensor<9223372036854775807xi32>}", 1)
    with pytest.raises(CompileError) as err:
        parse_text(bad, "mutant.ttir")
    assert "dimension larger than" in err.value.message
    assert str(err.value.location).startswith("mutant.ttir:")
    huge = text.replace(good, "{tt.divisibility = dense<128> : tensor<4096x4096xi32>}", 1)
    with pytest.raises(CompileError, match="elements; a tile holds at most"):
        parse_text(huge, "mutant.ttir")


TTIR_FILES = sorted((REPO / "examples/triton").glob("*.ttir")) + sorted(
    (REPO / "tests/data/triton").glob("*.ttir")
)


def _converted(path: Path) -> tile.KernelOp | None:
    """The tile kernel `convert-ttir` makes of `path` (None: a program it refuses)."""
    from tawac.ir.ttir import read_ttir
    from tawac.passes.convert_ttir import ConvertTtir

    module = read_ttir(path)
    try:
        ConvertTtir().apply(None, module)
    except CompileError:
        return None
    return _kernel(module)


def _encloses(outer: Operation, inner: Operation) -> bool:
    """Whether `outer`'s block is `inner`'s or encloses it (`outer` dominates `inner`
    where it comes first)."""
    block = inner.parent_block()
    while block is not None:
        if block is outer.parent_block():
            return True
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
    return False


@pytest.mark.parametrize("path", TTIR_FILES, ids=lambda p: p.name)
def test_converted_kernels_have_one_value_per_pure_expression(path):
    """convert-ttir emitted a fresh `pid * BM` per use (the Q load, the O store, the
    causal row iota, the loop end): the later passes met several spellings of one value.
    Its output is CSE'd: no two pure ops, one in scope of the other, are identical."""
    from xdsl.traits import is_side_effect_free
    from xdsl.transforms.common_subexpression_elimination import OperationInfo

    kernel = _converted(path)
    if kernel is None:
        raise AssertionError(f"{path.name} is refused")
    seen: dict[OperationInfo, list[Operation]] = {}
    for op in kernel.walk():
        if op is kernel or op.regions or not is_side_effect_free(op):
            continue
        seen.setdefault(OperationInfo(op), []).append(op)
    dups = [
        str(b)
        for ops in seen.values()
        for i, a in enumerate(ops)
        for b in ops[i + 1 :]
        if _encloses(a, b)
    ]
    assert not dups, dups[:3]


def test_the_converted_causal_attention_computes_its_row_origin_once():
    """`pid * BM` is read by the Q load, the O store, the causal row iota and the loop
    end: one `arith.muli`, one value."""
    kernel = _converted(REPO / "tests/data/triton/unseen_attention_causal.ttir")
    pid = next(o for o in kernel.walk() if isinstance(o, tile.ProgramIdOp) and o.axis.data == 0)
    muls = [o for o in kernel.walk() if o.name == "arith.muli" and pid.result in o.operands]
    assert len(muls) == 1
    assert len(list(muls[0].result.uses)) >= 3


@pytest.mark.parametrize("path", TTIR_FILES, ids=lambda p: p.name)
def test_every_shipped_ttir_compiles_to_ptx(path):
    from tawac import driver

    text = path.read_text()
    # refused, located: an fp8 output
    if path.name == "matmul_fp8_out.ttir":
        with pytest.raises(CompileError):
            driver.compile_module(driver.parse_text(text, "x.ttir"))
        return
    assert ".entry" in driver.compile_module(driver.parse_text(text, "x.ttir")).ptx


WHERE_LOADS = REPO / "tests/data/triton/spellings/matmul_where_loads.ttir"
#: matmul_where_loads.ttir's `a = tl.where(a_mask, tl.load(a_ptrs, mask=a_mask), 0.0)`
_A_WHERE = (
    "%a_54 = arith.select %a, %a_53, %cst_0 : tensor<128x64xi1>, tensor<128x64xf16> loc(#loc122)"
)
_B_WHERE = (
    "%b_56 = arith.select %b, %b_55, %cst : tensor<64x128xi1>, tensor<64x128xf16> loc(#loc124)"
)
_A_SELECT = "arith.select {}, %a_53, {} : tensor<128x64xi1>, tensor<128x64xf16> loc(#loc122)"
#: `a_mask` computed again (its own cmpi and broadcast): the same bound
_RECOMPUTED = (
    "%am = arith.cmpi slt, %a_ptrs_17, %a_mask_50 : tensor<1x64xi32> loc(#loc122)\n"
    "      %ab = tt.broadcast %am : tensor<1x64xi1> -> tensor<128x64xi1> loc(#loc122)\n"
    "      %a_54 = " + _A_SELECT.format("%ab", "%cst_0")
)
#: `offs_k[None, :] < K - k * BLOCK_SIZE_K - 1`: one column short of the load's bound
_SHORT = (
    "%k1 = arith.subi %a_mask_49, %c1_i32 : i32 loc(#loc122)\n"
    "      %ks = tt.splat %k1 : i32 -> tensor<1x64xi32> loc(#loc122)\n"
    "      %am = arith.cmpi slt, %a_ptrs_17, %ks : tensor<1x64xi32> loc(#loc122)\n"
    "      %ab = tt.broadcast %am : tensor<1x64xi1> -> tensor<128x64xi1> loc(#loc122)\n"
    "      %a_54 = " + _A_SELECT.format("%ab", "%cst_0")
)
_ONE_A = (
    "%one = arith.constant dense<1.000000e+00> : tensor<128x64xf16> loc(#loc122)\n"
    "      %a_54 = " + _A_SELECT.format("%a", "%one")
)
_ONE_B = (
    "%oneb = arith.constant dense<1.000000e+00> : tensor<64x128xf16> loc(#loc124)\n"
    "      %b_56 = arith.select %b, %b_55, %oneb : tensor<64x128xi1>, tensor<64x128xf16> "
    "loc(#loc124)"
)
#: A's load itself given `other=1.0` (the tile load's padding 1.0), the where around it
#: kept: its +0.0 is not what the tile load reads outside
_LOAD_OTHER_ONE = (
    "%a_53 = tt.load %a_ptrs_46, %a : tensor<128x64x!tt.ptr<f16>> loc(#loc121)",
    "%onel = arith.constant dense<1.000000e+00> : tensor<128x64xf16> loc(#loc121)\n"
    "      %a_53 = tt.load %a_ptrs_46, %a, %onel : tensor<128x64x!tt.ptr<f16>> loc(#loc121)",
)
_MINUS_ZERO = (
    "%mz = arith.constant dense<-0.000000e+00> : tensor<128x64xf16> loc(#loc122)\n"
    "      %a_54 = " + _A_SELECT.format("%a", "%mz")
)
_UNMASKED_LOAD = (
    "%a_53 = tt.load %a_ptrs_46, %a : tensor<128x64x!tt.ptr<f16>> loc(#loc121)",
    "%a_53 = tt.load %a_ptrs_46 : tensor<128x64x!tt.ptr<f16>> loc(#loc121)",
)

#: variant -> (edits of matmul_where_loads.ttir, the operands of the dot that stay
#: tile.selects, the float32 reference of C from A and B at K)
WHERE_VARIANTS = {
    # the spelling itself: both selects are the loads' zero fill
    "as_written": ((), "", lambda a, b, k: a @ b),
    "recomputed_mask": (((_A_WHERE, _RECOMPUTED),), "", lambda a, b, k: a @ b),
    # a mask other than the load's bound: A's last column dropped
    "mask_one_short": (
        ((_A_WHERE, _SHORT),), "a", lambda a, b, k: a[:, : k - 1] @ b[: k - 1]
    ),
    # other values than 0: the padding of K is 1 x 1 per column
    "other_one": (
        ((_A_WHERE, _ONE_A), (_B_WHERE, _ONE_B)),
        "ab",
        lambda a, b, k: a @ b + (-(-k // 64) * 64 - k),
    ),
    # -0.0 is not the zero fill (+0.0) of tile.load
    "other_minus_zero": (((_A_WHERE, _MINUS_ZERO),), "a", lambda a, b, k: a @ b),
    # the load is not bounded by the mask: the select is the only bound of A's K edge
    "load_unmasked": ((_UNMASKED_LOAD,), "a", lambda a, b, k: a @ b),
    # the load's own other is 1.0 (its padding): the where's 0.0 is not its fill
    "load_other_one": ((_LOAD_OTHER_ONE,), "a", lambda a, b, k: a @ b),
}  # fmt: skip


def _where_variant(name: str) -> str:
    text = WHERE_LOADS.read_text()
    for old, new in WHERE_VARIANTS[name][0]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def _interpret_matmul(kernel: tile.KernelOp, a, b, c) -> None:
    from tawac.analysis.grid import infer_grid

    shapes = {"a": a.shape, "b": b.shape, "c": c.shape}
    grid = [
        g["const"] if "const" in g else -(-shapes[g["cdiv"]["arg"]][g["cdiv"]["dim"]] // g["by"])
        for g in infer_grid(kernel)
    ]
    interpret(kernel, [a, b, c], tuple(grid))


@pytest.mark.parametrize("name", sorted(WHERE_VARIANTS))
def test_a_where_around_a_masked_load_is_dropped_exactly_when_it_is_the_zero_fill(name):
    """`tl.where(mask, tl.load(p, mask=mask), 0.0)`: the select is dropped (the dot reads
    the tile.load) only where its mask is the load's bound by a size (outside it the
    tile.load reads +0.0) and the other value is +0.0; else it stays. Either way the
    kernel computes what the Triton program does (torch in float32, ragged sizes)."""
    _edits, kept, ref = WHERE_VARIANTS[name]
    kernel = _kernel(parse_text(_where_variant(name), "matmul_where_loads.ttir"))
    (dot,) = [o for o in kernel.walk() if isinstance(o, tile.DotOp)]
    operands = {"a": dot.lhs.owner.name, "b": dot.rhs.owner.name}
    assert operands == {x: "tile.select" if x in kept else "tile.load" for x in "ab"}
    assert sum(isinstance(o, tile.SelectOp) for o in kernel.walk()) == len(kept)
    g = torch.Generator().manual_seed(44)
    for m, n, k in ((200, 300, 130), (1, 17, 70)):
        a, b = torch.randn(m, k, generator=g).half(), torch.randn(k, n, generator=g).half()
        c = torch.full((m, n), float("nan")).half()
        _interpret_matmul(kernel, a, b, c)
        want = ref(a.float(), b.float(), k)
        assert not torch.isnan(c).any()
        assert ((c.float() - want).abs().max() / want.abs().max()).item() < 2e-2, (m, n, k)


def test_a_dot_of_selects_is_refused_at_the_select_in_the_way():
    """A dot none of whose operands is a tile.load (both `tl.where`s kept, their other
    values 1.0): warp-specialize's error names the tile.select that stands between the
    load and the dot, at its `tl.where` line, not the kernel's `def`."""
    from tawac import driver

    py = (REPO / "tests/data/triton/spellings/matmul.py").read_text().splitlines()
    line = next(i for i, s in enumerate(py) if "a = tl.where(a_mask, tl.load(a_ptrs" in s) + 1
    text = _where_variant("other_one")
    with pytest.raises(CompileError) as err:
        driver.compile_module(driver.parse_text(text, "x.ttir"), schedule="heuristic")
    assert err.value.location.startswith(f"tests/data/triton/spellings/matmul.py:{line}:")
    assert err.value.message.startswith("warp-specialize: ")
    assert "tile.select" in err.value.message and "tile.dot" in err.value.message
    assert "kernels without MMAs" not in err.value.message


@pytest.mark.parametrize("name", [n for n, v in sorted(WHERE_VARIANTS.items()) if v[1]])
def test_a_kept_where_compiles_or_is_one_located_error(name):
    """Where the select stays, the pipeline compiles the kernel or refuses it with one
    `CompileError` at a line of the Triton source, never a traceback."""
    from tawac import driver

    try:
        res = driver.compile_module(
            driver.parse_text(_where_variant(name), "x.ttir"), schedule="heuristic"
        )
    except CompileError as e:
        assert str(e).startswith("tests/data/triton/spellings/matmul.py:"), str(e)
        assert "\n" not in str(e)
        return
    assert "wgmma.mma_async" in res.ptx


def test_an_op_using_its_own_result_is_a_located_error():
    """A fuzz finding (seed 13, mutant 2550 of examples/triton/vector_add.ttir): `%y_5 =
    tt.addptr %y_5, ...` (the parser resolves the forward name to the op's own result)
    sent the converter's pointer analysis round the cycle until Python's recursion limit:
    an internal error. The TTIR is now checked as the tile source is: every operand
    defined before its use, else one error at the using op's Python line."""
    text = (REPO / "examples/triton/vector_add.ttir").read_text()
    bad = text.replace("%y_5 = tt.addptr %y, ", "%y_5 = tt.addptr %y_5, ")
    assert bad != text
    with pytest.raises(CompileError, match=r"%y\w* is used before its definition") as e:
        parse_text(bad, "mutant.ttir")
    assert "vector_add.py:" in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
