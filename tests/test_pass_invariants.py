"""Invariants of the lowered IR, checked on the examples and on small kernels:

- lower-aref's shared-memory layout: every ring 1024-byte aligned (128-byte swizzled TMA
  boxes and wgmma descriptors assume it), every mbarrier array 8-byte aligned, no two
  allocations overlap, and the schedule's `smem_bytes` covers them all;
- warp-specialize's aref iteration numbers: a transfer's index must be distinct for
  every transfer through the same aref (slot = it mod D and phase = (it / D) & 1 are
  derived from it), including in nested loops.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import scf
from xdsl.ir import BlockArgument, SSAValue

from tawac import schedule
from tawac.dialects import aref, hopper, tile
from tawac.driver import parse_text, run_pipeline
from tawac.support.diagnostics import CompileError

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))

LOWER = "pad-loads,warp-specialize,plan{stages=%d persistent=false coarse-pipeline=false}," \
    "pipeline,cooperative-consumers,lower-aref"  # fmt: skip


def _lowered(text: str, name: str, stages: int = 3):
    module = parse_text(text, name)
    run_pipeline(module, LOWER % stages)
    (kernel,) = [op for op in module.walk() if isinstance(op, tile.KernelOp)]
    return kernel


def _allocations(kernel: tile.KernelOp):
    """(offset, size, kind) of every shared-memory allocation of the kernel."""
    out = []
    for op in kernel.walk():
        if isinstance(op, hopper.SmemAllocOp):
            t = op.result.type
            assert isinstance(t, hopper.SmemRingType)
            out.append((op.offset.value.data, hopper.ring_bytes(t), "ring"))
        elif isinstance(op, hopper.MbarrierAllocOp):
            t = op.result.type
            assert isinstance(t, hopper.MbarriersType)
            out.append((op.offset.value.data, 8 * t.count.data, "mbarriers"))
    return out


def _check_layout(kernel: tile.KernelOp) -> None:
    allocs = _allocations(kernel)
    assert allocs
    for off, _, kind in allocs:
        align = 1024 if kind == "ring" else 8
        assert off % align == 0, f"{kind} at offset {off} is not {align}-byte aligned: {allocs}"
    spans = sorted((off, off + size) for off, size, _ in allocs)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start, f"overlapping shared-memory allocations: {spans}"
    total = schedule.of(kernel).smem_bytes
    assert total is not None and total >= spans[-1][1]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_example_smem_layout(path, stages):
    _check_layout(_lowered(path.read_text(), str(path), stages))


def _loop(name: str, a: str, b: str) -> str:
    return f"""\
  %{name} = scf.for %k_{name} = %c0 to %K step %c64 iter_args(%acc_{name} = %init_{name}) -> (tensor<128x128xf32>) {{
    %x_{name} = tile.load %{a}[%m0, %k_{name}] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %y_{name} = tile.load %{b}[%n0, %k_{name}] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
    %d_{name} = tile.dot %x_{name}, %y_{name}, %acc_{name} transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
    scf.yield %d_{name} : tensor<128x128xf32>
  }}
"""  # noqa: E501


PROLOGUE = """\
tile.kernel @k(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid_m = tile.program_id x
  %pid_n = tile.program_id y
  %m0 = arith.muli %pid_m, %c128 : index
  %n0 = arith.muli %pid_n, %c128 : index
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  %init_first = arith.constant dense<0.0> : tensor<128x128xf32>
"""

# Two K loops in sequence, the same payload types: one aref, whose ring the second loop
# reuses (warp-specialize numbers its transfers on after the first loop's).
TWO_LOOPS = (
    PROLOGUE
    + _loop("first", "a", "b")
    + "  %init_second = arith.addf %first, %first : tensor<128x128xf32>\n"
    + _loop("second", "b", "a")
    + """\
  tile.store %second, %c[%m0, %n0] : tensor<128x128xf32> -> !tile.tensor<?x?xf32>
  tile.return
}
"""
)


def test_two_arefs_smem_layout():
    kernel = _lowered(TWO_LOOPS, "two_loops.mlir", stages=2)
    assert sum(isinstance(op, hopper.MbarrierAllocOp) for op in kernel.walk()) == 2
    _check_layout(kernel)


def test_two_loops_share_one_aref_numbered_on():
    """The second K loop reuses the first loop's aref: each loop has its own put, get
    and consumed on it, the second loop's numbered after the first loop's trips."""
    module = parse_text(TWO_LOOPS, "two_loops.mlir")
    run_pipeline(module, "warp-specialize")
    (create,) = [op for op in module.walk() if isinstance(op, aref.CreateOp)]
    users = [u.operation for u in create.result.uses]
    assert sorted(type(u).__name__ for u in users) == sorted(
        ["PutOp", "PutOp", "GetOp", "GetOp", "ConsumedOp", "ConsumedOp"]
    )
    second_put = [o for o in module.walk() if isinstance(o, aref.PutOp)][1]
    assert second_put.index.owner.name == "arith.addi"  # it + the first loop's trips


# --- iteration numbers in nested loops ------------------------------------------------------

NESTED = """\
tile.kernel @nested(%a: !tile.tensor<?x?xbf16>, %b: !tile.tensor<?x?xbf16>, %c: !tile.tensor<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = tile.program_id x
  %m0 = arith.muli %pid, %c128 : index
  %N = tile.dim %b[0] : !tile.tensor<?x?xbf16>
  %K = tile.dim %a[1] : !tile.tensor<?x?xbf16>
  scf.for %n0 = %c0 to %N step %c128 {
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = scf.for %k = %c0 to %K step %c64 iter_args(%acc_i = %zero) -> (tensor<128x128xf32>) {
      %x = tile.load %a[%m0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
      %y = tile.load %b[%n0, %k] : !tile.tensor<?x?xbf16> -> tensor<128x64xbf16>
      %d = tile.dot %x, %y, %acc_i transpose_rhs : tensor<128x64xbf16>, tensor<128x64xbf16> -> tensor<128x128xf32>
      scf.yield %d : tensor<128x128xf32>
    }
    %o = arith.truncf %acc : tensor<128x128xf32> to tensor<128x128xbf16>
    tile.store %o, %c[%m0, %n0] : tensor<128x128xbf16> -> !tile.tensor<?x?xbf16>
  }
  tile.return
}
"""  # noqa: E501


def _depends_on(v: SSAValue, target: SSAValue) -> bool:
    seen: set[SSAValue] = set()
    work = [v]
    while work:
        x = work.pop()
        if x is target:
            return True
        if x in seen:
            continue
        seen.add(x)
        if not isinstance(x, BlockArgument):
            work.extend(x.owner.operands)
    return False


def _enclosing_loops(op) -> list[scf.ForOp]:
    loops = []
    p = op.parent_op()
    while p is not None:
        if isinstance(p, scf.ForOp):
            loops.append(p)
        p = p.parent_op()
    return loops


def test_single_loop_index_depends_on_the_loop():
    """The plain GEMM: the put index is (k - lb) / step of the K loop."""
    module = parse_text((REPO / "examples" / "gemm.mlir").read_text(), "gemm.mlir")
    run_pipeline(module, "warp-specialize")
    for op in module.walk():
        if isinstance(op, aref.PutOp | aref.GetOp | aref.ConsumedOp):
            (loop,) = _enclosing_loops(op)
            assert _depends_on(op.index, loop.body.block.args[0])


def test_nested_loop_loads_are_rejected():
    """MMA operand loads in a loop nested in another loop are not supported yet: the
    transfers would be numbered by the inner loop alone, so the second outer iteration
    would reuse the first one's slots and phases. warp-specialize must refuse them with a
    diagnostic at the load (when support lands, this test becomes: the put/get index
    depends on the outer loop's induction variable too)."""
    module = parse_text(NESTED, "nested.mlir")
    with pytest.raises(CompileError) as err:
        run_pipeline(module, "warp-specialize,plan{stages=3},pipeline")
    assert "nested inside another loop are not supported yet" in err.value.message
    assert err.value.location is not None and err.value.location.startswith("nested.mlir:")


def test_coarse_pipeline_is_idempotent():
    """A loop coarse-pipeline expanded is marked `expanded` in the schedule: running the
    pass again leaves it alone."""
    text = (REPO / "examples" / "attention.mlir").read_text()
    once = parse_text(text, "attention.mlir")
    run_pipeline(once, "warp-specialize,plan,pipeline,coarse-pipeline")
    twice = parse_text(text, "attention.mlir")
    run_pipeline(twice, "warp-specialize,plan,pipeline,coarse-pipeline,coarse-pipeline")
    assert str(once) == str(twice)
    (kernel,) = [op for op in once.walk() if isinstance(op, tile.KernelOp)]
    assert [lp.expanded for lp in schedule.of(kernel).loops] == [True]
    # S of the first iteration peeled before the loop, S and P V in it, P V of the last after
    assert sum(isinstance(o, tile.DotOp) for o in once.walk()) == 4
