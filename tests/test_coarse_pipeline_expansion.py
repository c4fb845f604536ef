"""The modulo expansion of `coarse-pipeline` computes what the loop computes: a small
symbolic interpreter runs a consumer partition before and after the expansion of a
three-stage schedule (tiles as terms, index math on integers, MMA waits as no-ops) and
compares what is stored and the order in which each aref's slots are taken and released,
for short and long trip counts (the fallback loop, the prologue/epilogue only, the
steady loop)."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from tawac.dialects import aref, hopper, tile
from tawac.driver import parse_text, run_pipeline

REPO = Path(__file__).resolve().parent.parent
KERNEL = (REPO / "tests/filecheck/passes/coarse-pipeline-modulo.mlir").read_text()
START = KERNEL.index("\ntile.kernel @stages3(")
STAGES3 = KERNEL[START : KERNEL.index("// -----", START)]
STEP = 64

_INT = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivUIOp: lambda a, b: a // b,
    arith.CeilDivSIOp: lambda a, b: -(-a // b),
}
_CMP = {5: lambda a, b: a >= b, 9: lambda a, b: a >= b, 4: lambda a, b: a > b}


class _Run:
    def __init__(self, trips: int):
        self.trips = trips
        self.env: dict[SSAValue, object] = {}
        self.events: list[tuple] = []

    def block(self, block) -> list[object]:
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                return [self.env[v] for v in op.operands]
            self.op(op)
        return []

    def op(self, op: Operation) -> None:
        env = self.env
        args = [env.get(v) for v in op.operands]
        if isinstance(op, arith.ConstantOp):
            v = op.value
            env[op.result] = v.value.data if isinstance(op.result.type, IndexType) else "zero"
        elif type(op) in _INT:
            env[op.results[0]] = _INT[type(op)](*args)
        elif isinstance(op, arith.CmpiOp):
            env[op.result] = _CMP[op.predicate.value.data](*args)
        elif isinstance(op, tile.DimOp):
            env[op.result] = self.trips * STEP
        elif isinstance(op, tile.ProgramIdOp):
            env[op.result] = 0
        elif isinstance(op, aref.GetOp):
            self.events.append(("get", op.aref.name_hint, args[-1]))
            for n, r in enumerate(op.results):
                env[r] = ("slot", op.aref.name_hint, args[-1], n)
        elif isinstance(op, aref.ConsumedOp):
            self.events.append(("consumed", op.aref.name_hint, args[-1]))
        elif isinstance(op, hopper.WgmmaWaitOp):
            env[op.result] = args[0]
        elif isinstance(op, tile.StoreOp):
            self.events.append(("store", args[0]))
        elif isinstance(op, scf.ForOp):
            lb, ub, step = args[:3]
            vals = args[3:]
            i = lb
            while i < ub:
                env[op.body.block.args[0]] = i
                for a, x in zip(op.body.block.args[1:], vals, strict=True):
                    env[a] = x
                vals = self.block(op.body.block)
                i += step
            for r, x in zip(op.results, vals, strict=True):
                env[r] = x
        elif isinstance(op, scf.IfOp):
            region = op.true_region if args[0] else op.false_region
            for r, x in zip(op.results, self.block(region.block), strict=True):
                env[r] = x
        else:
            assert all(r.type != IndexType() for r in op.results), op.name
            for n, r in enumerate(op.results):
                env[r] = (op.name, *args, n)


def _consumer(pipeline: str):
    module = parse_text(STAGES3, "stages3.mlir")
    run_pipeline(module, pipeline)
    module.verify()
    (part,) = [
        o for o in module.walk() if isinstance(o, aref.PartitionOp) and o.role.data == "consumer"
    ]
    return part


BEFORE = "warp-specialize,plan,pipeline"
AFTER = BEFORE + ",coarse-pipeline"


@pytest.mark.parametrize("trips", [0, 1, 2, 3, 5])
def test_three_stage_expansion_computes_the_loop(trips: int):
    runs = []
    for pipeline in (BEFORE, AFTER):
        run = _Run(trips)
        run.block(_consumer(pipeline).body.block)
        runs.append(run)
    before, after = runs
    stores = [[e for e in r.events if e[0] == "store"] for r in runs]
    assert stores[0] == stores[1]
    for kind in ("get", "consumed"):
        assert [e for e in after.events if e[0] == kind] == [
            e for e in before.events if e[0] == kind
        ]
    assert len([e for e in after.events if e[0] == "get"]) == trips
    # a slot is released after it was taken, and at most two slots are held (the release
    # is one body late): the ring of three never deadlocks
    held = 0
    for e in after.events:
        held += {"get": 1, "consumed": -1}.get(e[0], 0)
        assert 0 <= held <= 2


def test_three_stage_structure():
    part = _consumer(AFTER)
    (guard,) = [o for o in part.body.block.ops if isinstance(o, scf.IfOp)]
    then_ops = list(guard.true_region.block.ops)
    (steady,) = [o for o in then_ops if isinstance(o, scf.ForOp)]
    # the accumulator and two copies of the MMA result
    assert len(steady.body.block.args) == 4
    (fallback,) = [o for o in guard.false_region.block.ops if isinstance(o, scf.ForOp)]
    assert any(isinstance(o, hopper.WgmmaWaitOp) for o in fallback.body.block.ops)
    gets = [o for o in then_ops if isinstance(o, aref.GetOp)]
    assert len(gets) == 2  # prologue bodies 0 and 1
