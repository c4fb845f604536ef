"""Schedule entries name what they apply to: arefs and consumer stores carry identities
(`aref.create "k"`, `tawac.store = "o"`), given when they are created, and the schedule's
per-aref and per-store decisions are found by them, never by position. A kernel whose
arefs come in another order than the one its schedule was decided on compiles to
equivalent code: the same decisions on the same arefs, the same instructions (the rings
only sit at other shared-memory offsets), and on a GPU the same result bit for bit."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from gpu_util import requires_gpu
from xdsl.printer import Printer

from tawac import schedule
from tawac.compiler import compile_module, parse_text, run_pipeline
from tawac.dialects import aref, tile
from tawac.support.diagnostics import CompileError
from tawac.support.options import PipelineOptions

REPO = Path(__file__).resolve().parent.parent

#: Kernels with several arefs: (source, identities in creation order).
KERNELS = [
    ("examples/attention.mlir", ["q", "k", "v"]),
    ("examples/gemm_residual.mlir", ["a_b", "c"]),
    ("tests/data/attention_bias.mlir", ["q", "k", "v", "bias"]),
    ("tests/data/variants/two_accumulators.mlir", None),
]


def _planned(path: str):
    module = parse_text((REPO / path).read_text(), Path(path).name)
    run_pipeline(module, PipelineOptions().pipeline(stop="pipeline"))
    return module


def _kernel(module) -> tile.KernelOp:
    return next(o for o in module.body.block.ops if isinstance(o, tile.KernelOp))


def _creates(module) -> list[aref.CreateOp]:
    return [o for o in _kernel(module).walk() if isinstance(o, aref.CreateOp)]


def _reversed_arefs(module):
    """A copy of `module` with its `aref.create`s in reverse order (the schedule as it
    was decided, on the first order)."""
    copy = module.clone()
    creates = _creates(copy)
    first = creates[0]
    for c in creates[1:]:
        c.detach()
        first.parent_block().insert_op_before(c, first)
        first = c
    return copy


def _text(module) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _without_creates(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if "aref.create" not in ln)


#: Integer moves and adds: the shared-memory addresses of rings at other offsets fold
#: differently (an offset of 0 needs no add).
_ADDRESS_MATH = ("mov.u32", "add.u32")


def _opcodes(ptx: str) -> Counter:
    """How many of each instruction the PTX has (registers, offsets, order and address
    arithmetic aside)."""
    ops = Counter()
    for line in ptx.splitlines():
        line = line.strip()
        if not line or line.startswith(("//", ".", "{", "}", "$")) or line.endswith(":"):
            continue
        op = re.split(r"[\s;]", line)[0]
        if op not in _ADDRESS_MATH:
            ops[op] += 1
    return ops


@pytest.mark.parametrize(("path", "names"), KERNELS, ids=[k[0] for k in KERNELS])
def test_arefs_are_named_after_what_they_carry(path, names):
    module = _planned(path)
    got = [c.ident for c in _creates(module)]
    assert len(set(got)) == len(got)
    if names is not None:
        assert got == names
    plan = schedule.of(_kernel(module))
    assert sorted(a.name for a in plan.arefs) == sorted(got)


def test_a_name_taken_twice_is_numbered():
    """Two arefs loading from the same tensors: `a_b` and `a_b_2`; two stores into one
    tensor: `c` and `c_2`."""
    src = (REPO / "tests/data/variants/two_accumulators.mlir").read_text()
    same = src.replace("tile.load %u[", "tile.load %a[").replace("tile.load %d[", "tile.load %b[")
    module = parse_text(same, "same.mlir")
    run_pipeline(module, "warp-specialize")
    assert [c.ident for c in _creates(module)] == ["a_b", "a_b_2"]
    src = (REPO / "tests/data/single_k_tile.mlir").read_text()
    twice = src.replace(
        "  tile.return",
        "  tile.store %o, %c[%n0, %m0] : tensor<128x128xbf16> -> "
        '!tile.tensor<?x?xbf16, ["M", "N"]>\n  tile.return',
    )
    module = parse_text(twice, "twice.mlir")
    run_pipeline(module, "warp-specialize")
    stores = [o.ident for o in _kernel(module).walk() if isinstance(o, tile.StoreOp)]
    assert stores == ["c", "c_2"]


@pytest.mark.parametrize(("path", "names"), KERNELS, ids=[k[0] for k in KERNELS])
def test_reordered_arefs_get_the_same_decisions(path, names):
    """The schedule decided on the first order, the arefs reversed: each aref gets its
    own depth, lag and multicast, and the kernel after the schedule is applied (before
    shared memory is laid out) is the same but for the order of the creates."""
    module = _planned(path)
    other = _reversed_arefs(module)
    assert [c.ident for c in _creates(other)] == [c.ident for c in _creates(module)][::-1]
    rest = PipelineOptions().pipeline(start="pipeline", stop="lower-aref")
    run_pipeline(module, rest)
    run_pipeline(other, rest)
    depth = {c.ident: c.result.type.depth.data for c in _creates(module)}
    assert {c.ident: c.result.type.depth.data for c in _creates(other)} == depth
    assert _without_creates(_text(other)) == _without_creates(_text(module))


@pytest.mark.parametrize(("path", "names"), KERNELS, ids=[k[0] for k in KERNELS])
def test_reordered_arefs_compile_to_equivalent_code(path, names):
    """Same instructions, same shared-memory size; only the rings' offsets differ."""
    module = _planned(path)
    other = _reversed_arefs(module)
    a = compile_module(module, start="pipeline")
    b = compile_module(other, start="pipeline")
    assert _opcodes(b.ptx) == _opcodes(a.ptx)
    assert b.sidecar["dynamic_smem"] == a.sidecar["dynamic_smem"]
    assert b.sidecar["params"] == a.sidecar["params"]


def test_positional_schedules_are_refused():
    """A schedule may not match arefs by position: an entry without a name is a parse
    error, one naming no aref of the kernel a located error."""
    src = (REPO / "tests/data/single_k_tile.mlir").read_text()
    attrs = (
        "attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1 regs 24, "
        "consumer wg 2 regs 240], arefs = [%s]>} {"
    )
    plain = src.replace(") {", ") " + attrs % "depth 2", 1)
    with pytest.raises(CompileError, match="expected the aref's name"):
        parse_text(plain, "k.mlir")
    wrong = src.replace(") {", ") " + attrs % "x: depth 2", 1)
    module = parse_text(wrong, "k.mlir")
    with pytest.raises(CompileError, match="names aref 'x', which the kernel does not have"):
        run_pipeline(module, "warp-specialize,plan")


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("path", ["examples/attention.mlir", "examples/gemm_residual.mlir"])
def test_reordered_arefs_compute_the_same_bits(path):
    import torch

    from tawac.analysis.args import kernel_arg_uses
    from tawac.runtime import load_kernel
    from tawac.runtime.runner import make_args
    from tawac.support.ptxas import assemble

    module = _planned(path)
    results = []
    for m in (_reversed_arefs(module), module):
        res = compile_module(m, start="pipeline")
        cubin, _ = assemble(res.ptx)
        kernel = load_kernel(cubin, res.sidecar)
        sizes = {"B": 1, "H": 2, "S": 300, "D": 128, "M": 300, "N": 520, "K": 200}
        loads, stores = kernel_arg_uses(res.kernel)
        args = make_args(res.sidecar, sizes, stores - loads, loads, seed=0)
        kernel(*args)
        torch.cuda.synchronize()
        results.append([a.clone() for a in args if isinstance(a, torch.Tensor)])
    for x, y in zip(*results, strict=True):
        assert torch.equal(x, y)


def test_plan_completes_a_schedule_written_on_the_kernel():
    """What a hand-written schedule leaves out follows from what it says, by the
    planner's rules: register budgets, the MMA's wait, the store's staging."""
    src = (REPO / "tests/data/single_k_tile.mlir").read_text()
    given = (
        "attributes {tawac.schedule = #tawac.schedule<roles = [producer wg 1, consumer wg 2],"
        " arefs = [a_b: depth 1]>} {"
    )
    module = parse_text(src.replace(") {", ") " + given, 1), "k.mlir")
    run_pipeline(module, "warp-specialize,plan")
    s = schedule.of(_kernel(module))
    assert s.planner == "given"
    assert [(r.role, r.warp_groups, r.regs) for r in s.roles] == [
        ("producer", 1, 24),
        ("consumer", 2, 240),
    ]
    assert [(st.name, st.mode) for st in s.stores] == [("c", "whole")]
